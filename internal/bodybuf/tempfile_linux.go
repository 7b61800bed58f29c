package bodybuf

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openTemp opens a file with no name in dir (O_TMPFILE): there is nothing
// to remove, even after a crash. A file system without O_TMPFILE gets a
// named file, removed as soon as it is open.
func openTemp(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == nil {
		return os.NewFile(uintptr(fd), dir+"/(body)"), nil
	}
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EINVAL) {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return openNamed(dir)
}
