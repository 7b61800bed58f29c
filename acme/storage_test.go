package acme

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestDirStorage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "acme")
	d, err := NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "ca/certs/a.crt"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Get of a missing key: %v, want ErrNotExist", err)
	}
	for _, k := range []string{"ca/certs/a.crt", "ca/certs/a.key", "ca/account.key"} {
		if err := d.Put(ctx, k, []byte("v:"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put(ctx, "ca/certs/a.crt", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, err := d.Get(ctx, "ca/certs/a.crt"); err != nil || string(b) != "new" {
		t.Fatalf("Get after overwrite = %q, %v", b, err)
	}
	keys, err := d.List(ctx, "ca/certs")
	if err != nil || !slices.Equal(keys, []string{"ca/certs/a.crt", "ca/certs/a.key"}) {
		t.Fatalf("List = %v, %v", keys, err)
	}
	if err := d.Delete(ctx, "ca/certs/a.key"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "ca/certs/a.key"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	// Modes: folders 0700, files 0600; no temporary file is left.
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700 | os.ModeDir
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		if filepath.Base(p)[0] == '.' && !fi.IsDir() && filepath.Base(filepath.Dir(p)) != ".locks" {
			t.Errorf("left over: %s", p)
		}
		return nil
	})
}

func TestDirStorageRejectsBadKeys(t *testing.T) {
	t.Parallel()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"", "/etc/passwd", "../x", "a/../../x", "a\\b"} {
		if err := d.Put(context.Background(), k, nil); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
	}
}

// TestDirLock: a second Lock waits until the first is released, and gives
// up when its context ends.
func TestDirLock(t *testing.T) {
	t.Parallel()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.lockPoll = time.Millisecond
	held, err := d.Lock(context.Background(), "ca/a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Lock(ctx, "ca/a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: %v, want a deadline error", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := d.Lock(context.Background(), "ca/a")
		if err == nil {
			l.Unlock()
		}
		got <- err
	}()
	if err := d.PutLocked(context.Background(), held, "ca/fenced", []byte("x")); err != nil {
		t.Fatalf("PutLocked while held: %v", err)
	}
	held.Unlock()
	select {
	case <-held.Lost():
	default:
		t.Fatal("Lost is not closed after Unlock")
	}
	if err := d.PutLocked(context.Background(), held, "ca/fenced", []byte("y")); !errors.Is(err, ErrLockLost) {
		t.Fatalf("PutLocked after Unlock: %v, want ErrLockLost", err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Lock never got the released lock")
	}
}
