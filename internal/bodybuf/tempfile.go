package bodybuf

import "os"

// openNamed makes a temporary file in dir and removes its name at once, so
// that only the open descriptor keeps it (the window for a crash to leave
// it behind is the two system calls).
func openNamed(dir string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "edgeway-body-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
