package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// splitRoutes is two pools of one server each, v1 and v2, and the routes
// given.
func splitRoutes(v1, v2 *httptest.Server, routes string) map[string]string {
	return map[string]string{"split.routes": fmt.Sprintf("upstream v1 { server %s }\nupstream v2 { server %s }\n%s",
		hostPort(v1), hostPort(v2), routes)}
}

// splitGet sends one GET with the given headers and returns the backend
// that answered, the status and the answer's Set-Cookie.
func splitGet(t *testing.T, c *http.Client, url string, hdr ...string) (backend string, status int, setCookie string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.Header.Get("X-Backend"), resp.StatusCode, resp.Header.Get("Set-Cookie")
}

// splitCount sends n GETs to url on workers connections and counts the
// backends that answered.
func splitCount(t *testing.T, url string, n, workers int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer c.CloseIdleConnections()
			for range next {
				b, status, _ := splitGet(t, c, url)
				if status != 200 {
					b = fmt.Sprintf("status %d", status)
				}
				mu.Lock()
				got[b]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return got
}

// TestSplitShares: 10,000 requests through a 90%/10% split land within
// ±1% of the shares, and 20 requests through 95%/5% send exactly one to
// the second pool (the split is smooth and exact, never rounded).
func TestSplitShares(t *testing.T) {
	v1, v2 := backend(t, "v1"), backend(t, "v2")
	_, base, _ := startEdgeway(t, "", splitRoutes(v1, v2,
		"route ninety {\n  match PathPrefix(`/ninety`)\n  to v1 90%, v2 10%\n}\n"+
			"route canary {\n  match PathPrefix(`/canary`)\n  to v1 95%, v2 5%\n}\n"))

	got := splitCount(t, base+"/canary", 20, 1)
	if got["v1"] != 19 || got["v2"] != 1 {
		t.Errorf("20 requests through 95%%/5%%: %v, want exactly 19 on v1 and 1 on v2", got)
	}
	got = splitCount(t, base+"/ninety", 10000, 8)
	if got["v1"]+got["v2"] != 10000 {
		t.Fatalf("10,000 requests through 90%%/10%%: %v, want all answered by v1 or v2", got)
	}
	if d := got["v2"] - 1000; d < -100 || d > 100 {
		t.Errorf("10,000 requests through 90%%/10%%: %v, want v2 within 1000 ±100 (±1%%)", got)
	}
}

// TestSplitSticky: a client placed by a sticky cookie gets the cookie on
// its first answer and never changes pool while it sends it; clients
// keyed by a header stay on the pool their header value hashes to.
func TestSplitSticky(t *testing.T) {
	v1, v2 := backend(t, "v1"), backend(t, "v2")
	_, base, _ := startEdgeway(t, "", splitRoutes(v1, v2,
		"route ck {\n  match PathPrefix(`/ck`)\n  to v1 50%, v2 50%\n  sticky cookie edgeway_pool\n}\n"+
			"route hd {\n  match PathPrefix(`/hd`)\n  to v1 50%, v2 50%\n  sticky header X-User\n}\n"))
	c := &http.Client{}
	seen := map[string]int{}
	for i := range 10 {
		first, _, ck := splitGet(t, c, base+"/ck")
		name, val, _ := strings.Cut(strings.Split(ck, ";")[0], "=")
		if name != "edgeway_pool" || val != first || !strings.Contains(ck, "HttpOnly") {
			t.Fatalf("client %d: first answer from %s with Set-Cookie %q, want edgeway_pool=%s; Path=/; HttpOnly", i, first, ck, first)
		}
		seen[first]++
		for k := range 8 {
			b, _, again := splitGet(t, c, base+"/ck", "Cookie", "edgeway_pool="+val)
			if b != first || again != "" {
				t.Fatalf("client %d request %d: answered by %s (Set-Cookie %q), want %s with no new cookie", i, k, b, again, first)
			}
		}
	}
	if seen["v1"] == 0 || seen["v2"] == 0 {
		t.Errorf("new clients placed %v, want both pools used", seen)
	}
	seen = map[string]int{}
	for i := range 20 {
		user := fmt.Sprintf("user-%d", i)
		first, _, _ := splitGet(t, c, base+"/hd", "X-User", user)
		seen[first]++
		for range 5 {
			if b, _, _ := splitGet(t, c, base+"/hd", "X-User", user); b != first {
				t.Fatalf("%s moved from %s to %s", user, first, b)
			}
		}
	}
	if seen["v1"] == 0 || seen["v2"] == 0 {
		t.Errorf("20 users placed %v, want both pools used", seen)
	}
}

// splitView is GET /api/routes/{name}.
type splitView struct {
	Name  string `json:"name"`
	Split *struct {
		Override bool `json:"override"`
		Pools    []struct {
			Upstream   string     `json:"upstream"`
			Configured float64    `json:"configured_share"`
			Share      float64    `json:"share"`
			RolledBack *time.Time `json:"rolled_back"`
			Rollbacks  uint64     `json:"rollbacks"`
		} `json:"pools"`
	} `json:"split"`
}

// splitShares returns the shares GET /api/routes/{name} shows, by pool.
func splitShares(t *testing.T, e *adminEdgeway, route string) (map[string]float64, splitView) {
	t.Helper()
	var v splitView
	if code := e.get(t, "/api/routes/"+route, &v); code != 200 || v.Split == nil {
		t.Fatalf("GET /api/routes/%s: %d %+v", route, code, v)
	}
	out := map[string]float64{}
	for _, p := range v.Split.Pools {
		out[p.Upstream] = p.Share
	}
	return out, v
}

// TestSplitPatch: PATCH /api/routes/NAME changes the shares live; GET
// shows them; they survive a reload and a restart (the journal in
// state_dir); bad bodies are 400 and change nothing; null restores the
// files' shares; a reload that changes the route's pools drops them.
func TestSplitPatch(t *testing.T) {
	v1, v2 := backend(t, "v1"), backend(t, "v2")
	dir := t.TempDir()
	route := "route r {\n  match PathPrefix(`/`)\n  to v1 90%, v2 10%\n}\n"
	routes := splitRoutes(v1, v2, route)
	admin := "state_dir " + filepath.Join(dir, "state")
	e := startAdminIn(t, dir, admin, "", routes)
	if shares, _ := splitShares(t, e, "r"); shares["v1"] != 90 || shares["v2"] != 10 {
		t.Fatalf("shares at start: %v, want v1 90 v2 10", shares)
	}
	if code, body := e.patch(t, "/api/routes/r", `{"shares": {"v1": 25, "v2": 75}}`); code != 200 || !strings.Contains(body, `"override": true`) {
		t.Fatalf("PATCH shares: %d %s", code, body)
	}
	if got := splitCount(t, e.base+"/", 20, 1); got["v1"] != 5 || got["v2"] != 15 {
		t.Fatalf("after PATCH 25/75: %v, want 5 on v1 and 15 on v2", got)
	}
	for _, bad := range []struct{ path, body, want string }{
		{"/api/routes/r", `{"shares": {"v1": 50, "v2": 60}}`, "add up to 110%"},
		{"/api/routes/r", `{"shares": {"v1": 100}}`, `no share for pool \"v2\"`},
		{"/api/routes/r", `{"shares": {"v1": 50, "v2": 40, "v3": 10}}`, `pool \"v3\" is not in the split`},
		{"/api/routes/r", `{"shares": {"v1": 50.001, "v2": 49.999}}`, "at most two decimals"},
		{"/api/routes/r", `{"weights": {}}`, "unknown field"},
		{"/api/routes/r", `[1]`, "expected a JSON object"},
		{"/api/routes/nope", `{"shares": null}`, `no route \"nope\"`},
	} {
		if code, body := e.patch(t, bad.path, bad.body); code/100 != 4 || !strings.Contains(body, bad.want) {
			t.Errorf("PATCH %s %s: %d %s, want a 4xx naming %q", bad.path, bad.body, code, body, bad.want)
		}
	}
	if shares, _ := splitShares(t, e, "r"); shares["v1"] != 25 || shares["v2"] != 75 {
		t.Fatalf("after refused PATCHes: %v, want 25/75 kept", shares)
	}
	// A reload keeps the shares.
	file := filepath.Join(dir, "routes", "split.routes")
	replaceFile(t, file, []byte(routes["split.routes"]+"# reloaded\n"))
	e.p.Cmd.Process.Signal(syscall.SIGHUP)
	e.p.WaitLog(t, `msg=reloaded`)
	if got := splitCount(t, e.base+"/", 20, 1); got["v1"] != 5 || got["v2"] != 15 {
		t.Fatalf("after reload: %v, want 5 on v1 and 15 on v2", got)
	}
	// So does a restart, through the journal.
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	e.p.Wait(t, 15*time.Second)
	e = startAdminIn(t, dir, admin, "", routes)
	if shares, v := splitShares(t, e, "r"); shares["v1"] != 25 || shares["v2"] != 75 || !v.Split.Override {
		t.Fatalf("after restart: %+v, want the 25/75 override", v.Split)
	}
	if got := splitCount(t, e.base+"/", 20, 1); got["v1"] != 5 || got["v2"] != 15 {
		t.Fatalf("after restart: %v, want 5 on v1 and 15 on v2", got)
	}
	if v := e.metric(t, `edgeway_split_share_ratio{route="r",upstream="v2"}`); v != "0.75" {
		t.Errorf("edgeway_split_share_ratio of v2 = %q, want 0.75", v)
	}
	// null: the files' shares again.
	if code, body := e.patch(t, "/api/routes/r", `{"shares": null}`); code != 200 || !strings.Contains(body, `"override": false`) {
		t.Fatalf("PATCH null: %d %s", code, body)
	}
	if got := splitCount(t, e.base+"/", 20, 1); got["v1"] != 18 || got["v2"] != 2 {
		t.Fatalf("after PATCH null: %v, want 18 on v1 and 2 on v2 (90/10)", got)
	}
	// An override goes with the route's pools: the same pools in another
	// order keep it, and another set of pools drops it.
	if code, body := e.patch(t, "/api/routes/r", `{"shares": {"v1": 50, "v2": 50}}`); code != 200 {
		t.Fatalf("PATCH: %d %s", code, body)
	}
	reloads := strings.Count(e.p.Log(), "msg=reloaded")
	replaceFile(t, file, []byte(strings.Replace(routes["split.routes"], "to v1 90%, v2 10%", "to v2 100%, v1 0%", 1)))
	testutil.WaitFor(t, "the reload that reordered the pools", func() bool { return strings.Count(e.p.Log(), "msg=reloaded") > reloads })
	if got := splitCount(t, e.base+"/", 20, 1); got["v1"] != 10 || got["v2"] != 10 {
		t.Fatalf("after the reload that reordered the pools: %v, want the override's 50/50 (10 each)", got)
	}
	if strings.Contains(e.p.Log(), `msg="route override dropped"`) {
		t.Fatalf("reordering the pools dropped the override:\n%s", e.p.Log())
	}
	replaceFile(t, file, []byte(strings.Replace(routes["split.routes"], "to v1 90%, v2 10%", "to v2", 1)))
	e.p.WaitLog(t, `msg="route override dropped" route=r`)
	testutil.WaitFor(t, "the dropped override out of the journal", func() bool {
		j, _ := os.ReadFile(filepath.Join(dir, "state", routeOverridesFile))
		return !strings.Contains(string(j), `"r"`)
	})
	if got := splitCount(t, e.base+"/", 10, 1); got["v2"] != 10 {
		t.Fatalf("after the reload that left one pool: %v, want all on v2", got)
	}
}

// splitFlaky is a backend that answers 500 while failing is set.
func splitFlaky(t *testing.T, name string, failing bool) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		switch {
		case strings.HasPrefix(r.URL.Path, "/missing"):
			w.WriteHeader(404)
		case failing:
			w.WriteHeader(500)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestSplitRollback: a canary that fails every request has its share set
// to 0 once it has min_requests in the window: logged, counted, shown in
// the API, and every later request goes to the healthy pool until a
// PATCH restores it. A healthy canary whose answers are client mistakes
// (404) is never rolled back.
func TestSplitRollback(t *testing.T) {
	v1 := backend(t, "v1")
	bad, good := splitFlaky(t, "bad", true), splitFlaky(t, "good", false)
	routes := map[string]string{"split.routes": fmt.Sprintf("upstream v1 { server %s }\n"+
		"upstream bad {\n  server %s\n  retries { attempts 0 }\n  outlier { consecutive_5xx off }\n}\nupstream good { server %s }\n"+
		"route failing {\n  match PathPrefix(`/f`)\n  to v1 90%%, bad 10%%\n  rollback { error_rate 5%% over 60s; min_requests 10 }\n}\n"+
		"route healthy {\n  match PathPrefix(`/h`) || PathPrefix(`/missing`)\n  to v1 90%%, good 10%%\n  rollback { error_rate 5%% over 60s; min_requests 10 }\n}\n",
		hostPort(v1), hostPort(bad), hostPort(good))}
	dir := t.TempDir()
	admin := "state_dir " + filepath.Join(dir, "state")
	e := startAdminIn(t, dir, admin, "", routes)

	got := splitCount(t, e.base+"/f", 100, 1) // 10 to the canary: the tenth trips
	if got["status 500"] != 10 {
		t.Fatalf("100 requests through 90%%/10%%: %v, want the canary's 10 answered 500", got)
	}
	e.p.WaitLog(t, `msg="split rollback: pool's share set to 0" route=failing upstream=bad`)
	if got := splitCount(t, e.base+"/f", 50, 1); got["v1"] != 50 {
		t.Fatalf("after the rollback: %v, want every request on v1", got)
	}
	shares, v := splitShares(t, e, "failing")
	if shares["bad"] != 0 || shares["v1"] != 90 || v.Split.Pools[1].RolledBack == nil || v.Split.Pools[1].Rollbacks != 1 {
		t.Fatalf("GET after the rollback: %+v, want bad at share 0 with rolled_back set", v.Split)
	}
	if m := e.metric(t, `edgeway_split_rollbacks_total{route="failing",upstream="bad"}`); m != "1" {
		t.Errorf("edgeway_split_rollbacks_total = %q, want 1", m)
	}
	// The rollback is kept across a restart, through the journal.
	journal := filepath.Join(dir, "state", routeOverridesFile)
	testutil.WaitFor(t, "the rollback in the journal", func() bool {
		j, _ := os.ReadFile(journal)
		return strings.Contains(string(j), `"rolled_back"`)
	})
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	e.p.Wait(t, 15*time.Second)
	e = startAdminIn(t, dir, admin, "", routes)
	if shares, v := splitShares(t, e, "failing"); shares["bad"] != 0 || v.Split.Pools[1].RolledBack == nil {
		t.Fatalf("after restart: %+v, want bad still rolled back", v.Split)
	}
	// An operator restores it.
	if code, body := e.patch(t, "/api/routes/failing", `{"shares": null}`); code != 200 {
		t.Fatalf("PATCH restore: %d %s", code, body)
	}
	if got := splitCount(t, e.base+"/f", 10, 1); got["status 500"] != 1 {
		t.Fatalf("after restoring: %v, want the canary back (1 of 10)", got)
	}

	// A healthy canary, with 4xx answers, is never rolled back.
	got = splitCount(t, e.base+"/missing", 200, 2)
	got2 := splitCount(t, e.base+"/h", 200, 2)
	if got["status 404"] != 20 || got2["good"] != 20 {
		t.Fatalf("healthy canary: /missing %v, /h %v; want the canary's 20 answered 404, and 20 on good", got, got2)
	}
	if shares, _ := splitShares(t, e, "healthy"); shares["good"] != 10 {
		t.Errorf("healthy canary share %v, want 10 (never rolled back)", shares)
	}
	if n := count(e.p, `msg="split rollback.*route=healthy`); n != 0 {
		t.Errorf("the healthy canary was rolled back:\n%s", e.p.Log())
	}
}
