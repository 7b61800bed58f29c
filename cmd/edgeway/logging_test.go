package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

func TestLogReopenFollowsRename(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	errLog, access := filepath.Join(dir, "edgeway.log"), filepath.Join(dir, "access.log")
	l, err := newLoggers(conf.Log{Access: true, Format: "text", Output: errLog, AccessOutput: access, Level: "info"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	l.access.Info("request", "path", "/before")
	l.log.Info("an error line")
	for _, f := range []string{errLog, access} {
		if err := os.Rename(f, f+".1"); err != nil { // logrotate's move
			t.Fatal(err)
		}
	}
	// Writers keep writing while the files are reopened.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				l.access.Info("request", "path", "/during")
			}
		})
	}
	if err := l.reopen(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	l.access.Info("request", "path", "/after")
	read := func(f string) string { b, _ := os.ReadFile(f); return string(b) }
	if a := read(access); !strings.Contains(a, "path=/after") || strings.Contains(a, "path=/before") || strings.Contains(a, "an error line") {
		t.Fatalf("new access.log:\n%s", a)
	}
	if old := read(access + ".1"); !strings.Contains(old, "path=/before") || strings.Contains(old, "path=/after") {
		t.Fatalf("rotated access.log:\n%s", old)
	}
	if got := strings.Count(read(access)+read(access+".1"), "path=/during"); got != 400 {
		t.Fatalf("%d of 400 lines written during the reopen survived", got)
	}
	if e := read(errLog + ".1"); !strings.Contains(e, "an error line") || strings.Contains(e, "path=") {
		t.Fatalf("error log:\n%s", e)
	}
	if _, err := os.Stat(errLog); err != nil {
		t.Fatalf("error log not reopened: %v", err)
	}
}

func TestLogReopenKeepsOldFileOnFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sub := filepath.Join(dir, "logs")
	os.Mkdir(sub, 0o755)
	file := filepath.Join(sub, "access.log")
	l, err := newLoggers(conf.Log{Access: true, Output: file, Level: "info"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if err := os.Rename(sub, sub+".gone"); err != nil { // the folder is gone: reopen cannot create the file
		t.Fatal(err)
	}
	if err := l.reopen(); err == nil {
		t.Fatal("reopen in a missing folder succeeded")
	}
	l.access.Info("request", "path", "/still")
	if b, _ := os.ReadFile(filepath.Join(sub+".gone", "access.log")); !strings.Contains(string(b), "path=/still") {
		t.Fatalf("logging stopped after a failed reopen: %q", b)
	}
}
