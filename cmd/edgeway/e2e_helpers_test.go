package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// backend is a real upstream server on loopback that names itself in every
// answer, so tests can see which server a request reached.
func backend(t *testing.T, name string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		fmt.Fprintf(w, "%s %s %s", name, r.Method, r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

// hostPort strips the scheme of an httptest URL.
func hostPort(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

// edgeway writes a main file with one listener "web" on a free port plus
// extra main-file text and route files, starts edgeway and returns the
// process and the listener's base URL.
func startEdgeway(t *testing.T, mainExtra string, files map[string]string) (*testutil.Proc, string, string) {
	t.Helper()
	return startEdgewayIn(t, t.TempDir(), mainExtra, files)
}

// startEdgewayIn is startEdgeway with its files in dir.
func startEdgewayIn(t *testing.T, dir, mainExtra string, files map[string]string) (*testutil.Proc, string, string) {
	t.Helper()
	testutil.RequireCurl(t)
	main := fmt.Sprintf(`
shutdown_grace 5s
log { access on; format text; output stderr; level debug }
listen web {
  addr 127.0.0.1:0
  protocols http1 h2c
  read_header_timeout 2s
}
%s
include "routes/*.routes"
`, mainExtra)
	all := map[string]string{"edgeway.conf": main}
	for k, v := range files {
		all[filepath.Join("routes", k)] = v
	}
	testutil.WriteFiles(t, dir, all)
	p := testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	addrs := p.Addrs(t, 1)
	return p, "http://" + addrs["web"], dir
}
