package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// patch sends a PATCH with a JSON body to the admin API.
func (e *adminEdgeway) patch(t *testing.T, path, body string) (int, string) {
	t.Helper()
	return e.send(t, http.MethodPatch, path, body, true)
}

// backends counts which backend answered n requests.
func backends(t *testing.T, base string, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		resp, err := http.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got[resp.Header.Get("X-Backend")]++
	}
	return got
}

type upstreamView struct {
	Name    string `json:"name"`
	Servers []struct {
		Address  string `json:"address"`
		State    string `json:"state"`
		Override struct {
			Weight *int  `json:"weight"`
			Drain  *bool `json:"drain"`
		} `json:"override"`
	} `json:"servers"`
}

// TestUpstreamOverrides drains a server through the admin API and checks
// that it takes no traffic, across a reload and a restart (the journal in
// state_dir), and that clearing the override brings it back.
func TestUpstreamOverrides(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	dir := t.TempDir()
	routes := map[string]string{"r.routes": fmt.Sprintf(
		"upstream u {\n  server %s\n  server %s\n}\nroute r {\n  match PathPrefix(`/`)\n  to u\n}\n", hostPort(a), hostPort(b))}
	admin := "state_dir " + filepath.Join(dir, "state")
	e := startAdminIn(t, dir, admin, "", routes)
	var u upstreamView
	if code := e.get(t, "/api/upstreams/u", &u); code != 200 || len(u.Servers) != 2 {
		t.Fatalf("GET /api/upstreams/u: %d %+v", code, u)
	}
	if code, body := e.patch(t, "/api/upstreams/u/servers/"+hostPort(b), `{"drain": true}`); code != 200 {
		t.Fatalf("PATCH drain: %d %s", code, body)
	}
	if got := backends(t, e.base, 6); got["b"] != 0 || got["a"] != 6 {
		t.Fatalf("after drain: %v, want every request on a", got)
	}
	for _, bad := range []struct{ path, body string }{
		{"/api/upstreams/u/servers/" + hostPort(b), `{"weight": 2000000}`},
		{"/api/upstreams/u/servers/" + hostPort(b), `{"colour": "red"}`},
		{"/api/upstreams/u/servers/127.0.0.1:1", `{"drain": true}`},
		{"/api/upstreams/nope/servers/127.0.0.1:1", `{"drain": true}`},
	} {
		if code, body := e.patch(t, bad.path, bad.body); code != 400 && code != 404 || !strings.Contains(body, `"error"`) {
			t.Errorf("PATCH %s %s: %d %s, want a 4xx JSON error", bad.path, bad.body, code, body)
		}
	}
	// A reload keeps the override (SIGHUP reloads a changed file).
	replaceFile(t, filepath.Join(dir, "routes", "r.routes"), []byte(routes["r.routes"]+"# reloaded\n"))
	e.p.Cmd.Process.Signal(syscall.SIGHUP)
	e.p.WaitLog(t, `msg=reloaded`)
	if got := backends(t, e.base, 4); got["b"] != 0 {
		t.Fatalf("after reload: %v, want none on b", got)
	}
	// So does a restart, through the journal.
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	e.p.Wait(t, 15*time.Second)
	e = startAdminIn(t, dir, admin, "", routes)
	e.get(t, "/api/upstreams/u", &u)
	if got := backends(t, e.base, 4); got["b"] != 0 {
		t.Fatalf("after restart: %v, want none on b; upstream %+v", got, u)
	}
	// Clearing brings b back.
	if code, body := e.patch(t, "/api/upstreams/u/servers/"+hostPort(b), `{"drain": null}`); code != 200 {
		t.Fatalf("PATCH clear: %d %s", code, body)
	}
	if got := backends(t, e.base, 6); got["b"] == 0 {
		t.Fatalf("after clearing: %v, want b back", got)
	}
	var all struct {
		Upstreams []upstreamView `json:"upstreams"`
	}
	if code := e.get(t, "/api/upstreams", &all); code != 200 || len(all.Upstreams) != 1 {
		t.Fatalf("GET /api/upstreams: %d %+v", code, all)
	}
	if v := e.metric(t, `edgeway_upstream_server_state{server="`+hostPort(b)+`",state="healthy",upstream="u"}`); v != "1" {
		t.Errorf("state metric of b = %q, want 1", v)
	}
	if v := e.metric(t, `edgeway_upstream_server_transitions_total{server="`+hostPort(b)+`",to="draining",upstream="u"}`); v != "1" {
		t.Errorf("transitions of b into draining = %q, want 1 (since the restart)", v)
	}
}

// TestUpstreamOverrideGoesWithItsServer: an override is dropped, live and
// in the journal, when a reload removes its server; the API lists it as
// dropped, and the server added back (and a restart after that) starts
// without it.
func TestUpstreamOverrideGoesWithItsServer(t *testing.T) {
	a, b := backend(t, "a"), backend(t, "b")
	dir := t.TempDir()
	pool := func(servers ...string) map[string]string {
		return map[string]string{"r.routes": fmt.Sprintf("upstream u {\n  server %s\n}\nroute r {\n  match PathPrefix(`/`)\n  to u\n}\n",
			strings.Join(servers, "\n  server "))}
	}
	admin := "state_dir " + filepath.Join(dir, "state")
	e := startAdminIn(t, dir, admin, "", pool(hostPort(a), hostPort(b)))
	if code, body := e.patch(t, "/api/upstreams/u/servers/"+hostPort(b), `{"drain": true}`); code != 200 {
		t.Fatalf("PATCH drain: %d %s", code, body)
	}
	if n := count(e.p, `server=`+regexp.QuoteMeta(hostPort(b))+`.*admin: drain true`); n != 1 {
		t.Errorf("one drain logged %d lines, want 1:\n%s", n, e.p.Log())
	}
	journal := filepath.Join(dir, "state", overridesFile)
	if j, _ := os.ReadFile(journal); !strings.Contains(string(j), hostPort(b)) {
		t.Fatalf("journal after the drain: %s", j)
	}
	file := filepath.Join(dir, "routes", "r.routes")
	replaceFile(t, file, []byte(pool(hostPort(a))["r.routes"]))
	e.p.WaitLog(t, `msg="upstream override dropped" upstream=u server=`+regexp.QuoteMeta(hostPort(b))+` override="{\\"drain\\":true}" reason="its server left the files"`)
	// The journal is rewritten just after the line is logged.
	testutil.WaitFor(t, "the dropped override gone from the journal", func() bool {
		j, _ := os.ReadFile(journal)
		return !strings.Contains(string(j), hostPort(b))
	})
	var all struct {
		Dropped []struct {
			Upstream, Server, Reason string
			Override                 struct{ Drain *bool }
		} `json:"dropped_overrides"`
	}
	if code := e.get(t, "/api/upstreams", &all); code != 200 || len(all.Dropped) != 1 || all.Dropped[0].Server != hostPort(b) ||
		all.Dropped[0].Override.Drain == nil || !*all.Dropped[0].Override.Drain {
		t.Fatalf("GET /api/upstreams dropped_overrides: %d %+v", code, all.Dropped)
	}
	replaceFile(t, file, []byte(pool(hostPort(a), hostPort(b))["r.routes"]))
	testutil.WaitFor(t, "b back in the pool, without its drain", func() bool { return backends(t, e.base, 6)["b"] > 0 })
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	e.p.Wait(t, 15*time.Second)
	e = startAdminIn(t, dir, admin, "", pool(hostPort(a), hostPort(b)))
	if got := backends(t, e.base, 6); got["b"] == 0 {
		t.Fatalf("after restart: %v, want b serving (its override was dropped)", got)
	}
}
