package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b", "f.json")
	for _, content := range []string{"first", "second, longer than the first", "3"} {
		if err := Write(p, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v (%v), want 0600", fi.Mode(), err)
	}
	di, err := os.Stat(filepath.Dir(p))
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v (%v), want 0700", di.Mode(), err)
	}
	left, _ := os.ReadDir(filepath.Dir(p))
	if len(left) != 1 {
		t.Errorf("the folder holds %d entries, want only the file (no temporary left)", len(left))
	}
}

func TestWriteIntoAFileFails(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "x")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(blocker, "f"), []byte("v")); err == nil {
		t.Fatal("a write below a plain file succeeded")
	}
}
