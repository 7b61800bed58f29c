package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/internal/testutil"
)

const e2eToken = "e2e-admin-token"

// adminEdgeway is a running edgeway with an admin block.
type adminEdgeway struct {
	p     *testutil.Proc
	base  string // the web listener
	admin string // the admin API
	dir   string
}

// startAdmin starts edgeway from a main file with one listener, an admin
// block on a free port with a token file, mainExtra and route files.
func startAdmin(t *testing.T, mainExtra string, files map[string]string) *adminEdgeway {
	t.Helper()
	return startAdminIn(t, t.TempDir(), "", mainExtra, files)
}

// startAdminIn is startAdmin in dir, with adminExtra inside the admin
// block.
func startAdminIn(t *testing.T, dir, adminExtra, mainExtra string, files map[string]string) *adminEdgeway {
	t.Helper()
	testutil.RequireCurl(t)
	tokenFile := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	main := fmt.Sprintf(`
admin { listen 127.0.0.1:0; token_file %q; %s }
listen web {
  addr 127.0.0.1:0
  read_header_timeout 2s
}
%s
include "routes/*.routes"
`, tokenFile, adminExtra, mainExtra)
	all := map[string]string{"edgeway.conf": main}
	for k, v := range files {
		all[filepath.Join("routes", k)] = v
	}
	testutil.WriteFiles(t, dir, all)
	p := testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	addrs := p.Addrs(t, 1)
	m := adminAddrRE.FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no admin address in the log:\n%s", p.Log())
	}
	return &adminEdgeway{p: p, base: "http://" + addrs["web"], admin: "http://" + m[1], dir: dir}
}

var adminAddrRE = regexp.MustCompile(`msg="admin API listening" addr=(\S+)`)

// do calls the admin API as curl would, with the token when auth is set.
func (e *adminEdgeway) do(t *testing.T, method, path string, auth bool) (int, string) {
	t.Helper()
	return e.send(t, method, path, "", auth)
}

// send is do with a request body ("" for none).
func (e *adminEdgeway) send(t *testing.T, method, path, body string, auth bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.admin+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+e2eToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// get calls GET path with the token and decodes the JSON answer into v.
func (e *adminEdgeway) get(t *testing.T, path string, v any) int {
	t.Helper()
	code, body := e.do(t, http.MethodGet, path, true)
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %d %q: %v", path, code, body, err)
	}
	return code
}

// metric returns the value of one sample line of /metrics ("" when absent).
func (e *adminEdgeway) metric(t *testing.T, sample string) string {
	t.Helper()
	_, body := e.do(t, http.MethodGet, "/metrics", true)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

func (e *adminEdgeway) ready(t *testing.T) int {
	code, _ := e.do(t, http.MethodGet, "/readyz", false)
	return code
}

func twoBackendRoutes(a, b, to string) string {
	return fmt.Sprintf("upstream a { server %s }\nupstream b { server %s }\nroute r {\n  match PathPrefix(`/`)\n  set_header X-Via edgeway\n  to %s\n}\n", a, b, to)
}

func TestAdminEndpoints(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	e := startAdmin(t, "", map[string]string{"r.routes": twoBackendRoutes(hostPort(a), hostPort(b), "a")})
	testutil.WaitFor(t, "/readyz 200", func() bool { return e.ready(t) == http.StatusOK })
	if code, body := e.do(t, "GET", "/healthz", false); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	for _, path := range []string{"/api/routes", "/api/config", "/metrics", "/api/explain?url=http://x/"} {
		if code, _ := e.do(t, "GET", path, false); code != http.StatusUnauthorized {
			t.Errorf("%s without token: %d, want 401", path, code)
		}
	}
	var routes struct{ Routes []admin.Route }
	e.get(t, "/api/routes", &routes)
	want := admin.Route{Name: "r", Kind: "http", Rule: "PathPrefix(`/`)", Priority: 15, Listeners: []string{"web"},
		Upstream: "a", Middlewares: []string{"set_header"}, Source: filepath.Join(e.dir, "routes", "r.routes") + ":3:1"}
	if len(routes.Routes) != 1 || fmt.Sprint(routes.Routes[0]) != fmt.Sprint(want) {
		t.Fatalf("routes %+v\nwant %+v", routes.Routes, want)
	}
	checkConfigFiles(t, e)
	var ex admin.Explanation
	q := url.Values{"method": {"POST"}, "url": {e.base + "/x"}, "header": {"Host: any.test"}}
	if code := e.get(t, "/api/explain?"+q.Encode(), &ex); code != 200 || ex.Route != "r" || ex.Upstream != "a" || ex.Rule != "PathPrefix(`/`)" {
		t.Fatalf("explain: %d %+v", code, ex)
	}
	if code, body := e.do(t, "GET", "/api/explain?sni=db.test", true); code != 404 || !strings.Contains(body, `no tcp route claims`) {
		t.Fatalf("explain sni: %d %s", code, body)
	}
	if v := e.metric(t, `edgeway_config_info{hash="`+configHash(t, e)+`"}`); v != "1" {
		t.Errorf("edgeway_config_info for the live hash = %q", v)
	}
}

// checkConfigFiles holds GET /api/config to the files on disk.
func checkConfigFiles(t *testing.T, e *adminEdgeway) {
	t.Helper()
	var st admin.ConfigStatus
	e.get(t, "/api/config", &st)
	if st.Generation < 1 || st.Version == "" || len(st.Files) != 2 || st.Hash != admin.ConfigHash(st.Files) {
		t.Fatalf("config %+v", st)
	}
	for _, f := range st.Files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("%s: sha256 %s, file has %x", f.Path, f.SHA256, sum)
		}
	}
}

func configHash(t *testing.T, e *adminEdgeway) string {
	var st admin.ConfigStatus
	e.get(t, "/api/config", &st)
	return st.Hash
}

func TestAdminReload(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	e := startAdmin(t, "", map[string]string{"r.routes": twoBackendRoutes(hostPort(a), hostPort(b), "a")})
	get := func() string { out, _ := testutil.Curl(t, e.base+"/"); return out }
	okBefore := e.metric(t, `edgeway_reloads_total{result="ok"}`)
	file := filepath.Join(e.dir, "routes", "r.routes")

	// A valid file: the API reload applies it (the file watcher may have
	// applied it first; the answer is the same).
	os.WriteFile(file, []byte(twoBackendRoutes(hostPort(a), hostPort(b), "b")), 0o644)
	code, body := e.do(t, "POST", "/api/reload", true)
	var res admin.ReloadResult
	json.Unmarshal([]byte(body), &res)
	if code != 200 || !res.OK || res.Trigger != "api" || res.Generation < 2 {
		t.Fatalf("reload: %d %s", code, body)
	}
	if got := get(); !strings.HasPrefix(got, "b ") {
		t.Fatalf("after reload: %q", got)
	}
	if after := e.metric(t, `edgeway_reloads_total{result="ok"}`); after == okBefore {
		t.Errorf("edgeway_reloads_total{result=\"ok\"} stayed %s", after)
	}

	// A broken file: refused with file:line:col, the old routes stay live.
	os.WriteFile(file, []byte("route r {\n  match PathPrefix(`/`)\n  to missing\n}\n"), 0o644)
	code, body = e.do(t, "POST", "/api/reload", true)
	res = admin.ReloadResult{}
	json.Unmarshal([]byte(body), &res)
	if code != http.StatusUnprocessableEntity || res.OK || len(res.Errors) == 0 ||
		res.Errors[0].At != file+":3:6" || !strings.Contains(res.Errors[0].Message, `unknown upstream "missing"`) {
		t.Fatalf("broken reload: %d %s", code, body)
	}
	if got := get(); !strings.HasPrefix(got, "b ") {
		t.Fatalf("a refused reload changed routing: %q", got)
	}
	if v := e.metric(t, `edgeway_reloads_total{result="error"}`); v == "0" || v == "" {
		t.Errorf("edgeway_reloads_total{result=\"error\"} = %q", v)
	}
	var st admin.ConfigStatus
	e.get(t, "/api/config", &st)
	if st.LastReload == nil || st.LastReload.OK || len(st.LastReload.Errors) == 0 {
		t.Fatalf("config after a refused reload: %+v", st)
	}
}

func TestReadinessAndShutdownDelay(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	up := backend(t, "up")
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		<-release
		io.WriteString(w, "finished")
	}))
	t.Cleanup(slow.Close)
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before slow.Close, also when the test fails early
	routes := fmt.Sprintf("upstream slow { server %s }\nupstream up { server %s }\n"+
		"route slow { match Path(`/slow`)\n priority 100\n to slow }\nroute up { match PathPrefix(`/`)\n to up }\n", hostPort(slow), hostPort(up))
	// The delay is long: the test ends it with a second SIGTERM.
	e := startAdmin(t, "shutdown_delay 5m\nshutdown_grace 10s\nlog { access off }", map[string]string{"a.routes": routes})
	testutil.WaitFor(t, "/readyz 200", func() bool { return e.ready(t) == http.StatusOK })

	done := make(chan string, 1)
	go func() { out, _ := testutil.Curl(t, e.base+"/slow"); done <- out }()
	select {
	case <-entered:
	case out := <-done:
		t.Fatalf("/slow answered %q without reaching the slow backend", out)
	case <-time.After(10 * time.Second):
		t.Fatal("/slow never reached the slow backend")
	}
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	testutil.WaitFor(t, "/readyz 503 after SIGTERM", func() bool { return e.ready(t) == http.StatusServiceUnavailable })
	// Within the delay new connections are still served...
	if out, code := testutil.Curl(t, e.base+"/new"); code != 0 || !strings.HasPrefix(out, "up GET /new") {
		t.Fatalf("request during shutdown_delay: exit %d %q", code, out)
	}
	// ... and the request in flight completes.
	free()
	if out := <-done; out != "finished" {
		t.Fatalf("in-flight request: %q", out)
	}
	if code, _ := e.do(t, "POST", "/api/reload", true); code != http.StatusServiceUnavailable {
		t.Errorf("reload while stopping: %d, want 503", code)
	}
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	e.p.WaitLog(t, "shutdown delay cut short")
	if code := e.p.Wait(t, 10*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, e.p.Log())
	}
}

func TestAccessLogReopenedOnSIGUSR1(t *testing.T) {
	dir := t.TempDir()
	access := filepath.Join(dir, "access.log")
	e := startAdmin(t, fmt.Sprintf("log { access on; output stderr; access_output %q }", access),
		map[string]string{"a.routes": "route r { match PathPrefix(`/`)\n respond 200 \"ok\" }\n"})
	contains := func(file, s string) bool { b, _ := os.ReadFile(file); return strings.Contains(string(b), s) }
	testutil.Curl(t, e.base+"/first")
	testutil.WaitFor(t, "the first request in access.log", func() bool { return contains(access, "path=/first") })
	if err := os.Rename(access, access+".1"); err != nil { // what logrotate does
		t.Fatal(err)
	}
	e.p.Cmd.Process.Signal(syscall.SIGUSR1)
	e.p.WaitLog(t, "log files reopened")
	testutil.Curl(t, e.base+"/second")
	testutil.WaitFor(t, "the second request in the new access.log", func() bool { return contains(access, "path=/second") })
	if contains(access+".1", "path=/second") || contains(access, "path=/first") {
		t.Fatal("lines went to the wrong file after the reopen")
	}
	if contains(access, "msg=listening") {
		t.Fatal("error log lines in the access log")
	}
}
