package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestReloadNamesListenerSettings changes listener settings of both
// classes in one reload: the live ones are applied and named
// (not_found_body is served at once; read_header_timeout holds from the
// next request), and the restart-class one (keepalive_idle) is named in
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
		"read_header_timeout 1h\n  write_timeout 5s\n  keepalive_idle 30s\n  not_found_body \"gone\\n\"", 1)
	if changed == string(main) {
		t.Fatal("the test's main file changed shape")
	}
	if err := os.WriteFile(mainFile, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Cmd.Process.Signal(syscall.SIGHUP)
	p.WaitLog(t, `listener settings changed.*listener=web settings=keepalive_idle`)
	p.WaitLog(t, `listener settings applied.*listener=web settings="read_header_timeout write_timeout not_found_body"`)
	testutil.WaitFor(t, "the live not_found_body", func() bool {
		out, _ := testutil.Curl(t, base+"/unknown")
		return out == "gone\n"
	})
	// A head left unfinished is still being waited for past the old
	// read_header_timeout (2s, which closes it: TestReadHeaderTimeoutCutsSlowClient).
	// The fixed wait shows that something does not happen; were the
	// reload not applied, the connection would be closed by then.
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: a\r\n")
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an unfinished head after read_header_timeout went to 1h: read %d bytes, %v (want still open)", n, err)
	}
}
