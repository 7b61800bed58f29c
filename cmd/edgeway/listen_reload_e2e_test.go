package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestReloadNamesListenerSettings changes listener settings of both
// classes in one reload: the live one (not_found_body) is served at once,
// and each restart-class one (write_timeout, keepalive_idle) is named in
// the warning with its listener.
func TestReloadNamesListenerSettings(t *testing.T) {
	p, base, dir := startEdgeway(t, "", map[string]string{"r.routes": "route r {\n  match Path(`/known`)\n  respond 200 \"known\"\n}\n"})
	if out, _ := testutil.Curl(t, base+"/unknown"); strings.Contains(out, "gone") {
		t.Fatalf("before the reload the 404 body is already %q", out)
	}
	mainFile := filepath.Join(dir, "edgeway.conf")
	main, err := os.ReadFile(mainFile)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(main), "read_header_timeout 2s",
		"read_header_timeout 2s\n  write_timeout 5s\n  keepalive_idle 30s\n  not_found_body \"gone\\n\"", 1)
	if changed == string(main) {
		t.Fatal("the test's main file changed shape")
	}
	if err := os.WriteFile(mainFile, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Cmd.Process.Signal(syscall.SIGHUP)
	p.WaitLog(t, `listener settings changed.*listener=web settings="write_timeout keepalive_idle"`)
	testutil.WaitFor(t, "the live not_found_body", func() bool {
		out, _ := testutil.Curl(t, base+"/unknown")
		return out == "gone\n"
	})
}
