package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestRouteResponseTimeout: a route's response_timeout replaces its
// pool's for that route only: a route with a short one gets 504 from a
// server that has not answered yet, while another route to the same pool
// (the pool's 60s) waits for the answer.
func TestRouteResponseTimeout(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan string, 4)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "late")
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	routes := fmt.Sprintf("upstream slow {\n  server %s\n  retries { attempts 0 }\n}\n"+
		"route short {\n  match PathPrefix(`/short`)\n  response_timeout 300ms\n  to slow\n}\n"+
		"route long {\n  match PathPrefix(`/long`)\n  to slow\n}\n", hostPort(slow))
	p, base, _ := startEdgeway(t, "", map[string]string{"slow.routes": routes})

	long := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/long")
		if err != nil {
			long <- err.Error()
			return
		}
		res.Body.Close()
		long <- res.Status
	}()
	if got := <-arrived; got != "/long" {
		t.Fatalf("server got %s first, want /long", got)
	}
	if status, body := upstreamTLSGet(t, base+"/short"); status != 504 {
		t.Fatalf("/short: %d %q, want 504 after its 300ms response_timeout", status, body)
	}
	p.WaitLog(t, `route=short .*status=504 .*timeout=response_timeout`)
	select {
	case got := <-long:
		t.Fatalf("/long answered %q before the server did: the short route's timeout leaked", got)
	default:
	}
	close(release)
	if got := <-long; got != "200 OK" {
		t.Fatalf("/long: %s, want 200 OK once the server answers", got)
	}
}

// policyPost sends a POST with body and returns the status.
func policyPost(t *testing.T, url, body string) int {
	t.Helper()
	res, err := http.Post(url, "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestRouteMaxBodyBytes: a route's max_body_bytes replaces the
// listener's for that route only: a body over it is 413 and never
// reaches the server, while another route takes it.
func TestRouteMaxBodyBytes(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.URL.Path] += int(n)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	routes := fmt.Sprintf("upstream u { server %s }\n"+
		"route small {\n  match PathPrefix(`/small`)\n  max_body_bytes 10\n  to u\n}\n"+
		"route open {\n  match PathPrefix(`/open`)\n  max_body_bytes unlimited\n  to u\n}\n"+
		"route plain {\n  match PathPrefix(`/plain`)\n  to u\n}\n", hostPort(srv))
	p, base, _ := startEdgeway(t, "", map[string]string{"u.routes": routes})
	if s := policyPost(t, base+"/small", strings.Repeat("x", 20)); s != 413 {
		t.Errorf("/small with 20 bytes: %d, want 413 (its max_body_bytes 10)", s)
	}
	p.WaitLog(t, `msg="request body too large" route=small content_length=20 max_body_bytes=10`)
	if s := policyPost(t, base+"/small", "0123456789"); s != 200 {
		t.Errorf("/small with 10 bytes: %d, want 200", s)
	}
	if s := policyPost(t, base+"/plain", strings.Repeat("x", 20)); s != 200 {
		t.Errorf("/plain with 20 bytes: %d, want 200 (the listener's 100MiB)", s)
	}
	if s := policyPost(t, base+"/open", strings.Repeat("x", 1000)); s != 200 {
		t.Errorf("/open with 1000 bytes: %d, want 200", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if got["/small"] != 10 || got["/plain"] != 20 || got["/open"] != 1000 {
		t.Errorf("the server got %v, want /small 10 bytes (the refused body never sent), /plain 20, /open 1000", got)
	}
}

// TestRouteRetries: a route's retries block replaces its pool's: with
// the pool's retries off, the route that retries on 503 always gets the
// healthy server's answer, while another route to the pool sees the
// failing server's 503s.
func TestRouteRetries(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	t.Cleanup(bad.Close)
	good := backend(t, "good")
	routes := fmt.Sprintf("upstream u {\n  server %s\n  server %s\n  retries { attempts 0 }\n  outlier { consecutive_5xx off }\n}\n"+
		"route retry {\n  match PathPrefix(`/retry`)\n  retries { attempts 1; on 503 }\n  to u\n}\n"+
		"route plain {\n  match PathPrefix(`/plain`)\n  to u\n}\n", hostPort(bad), hostPort(good))
	p, base, _ := startEdgeway(t, "", map[string]string{"u.routes": routes})
	for i := range 6 {
		if s, body := upstreamTLSGet(t, base+"/retry"); s != 200 {
			t.Fatalf("/retry #%d: %d %q, want 200 (retried on the healthy server)", i, s, body)
		}
	}
	p.WaitLog(t, `msg="upstream request failed; retrying" route=retry`)
	codes := map[int]int{}
	for range 6 {
		s, _ := upstreamTLSGet(t, base+"/plain")
		codes[s]++
	}
	if codes[503] == 0 || codes[200] == 0 {
		t.Errorf("/plain answers %v, want both 503 and 200 (the pool's attempts 0: no retry)", codes)
	}
}

// TestRouteConnectTimeout: a route's connect_timeout replaces its
// pool's: to a server whose accept queue is full (a dial that never
// completes), the route with 300ms fails with 502 while the pool's is a
// minute.
func TestRouteConnectTimeout(t *testing.T) {
	addr := testutil.FullBacklog(t)
	routes := fmt.Sprintf("upstream stuck {\n  server %s\n  connect_timeout 60s\n  retries { attempts 0 }\n}\n"+
		"route fast {\n  match PathPrefix(`/fast`)\n  connect_timeout 300ms\n  to stuck\n}\n", addr)
	p, base, _ := startEdgeway(t, "", map[string]string{"u.routes": routes})
	if s, body := upstreamTLSGet(t, base+"/fast"); s/100 != 5 {
		t.Fatalf("/fast: %d %q, want a 5xx after its 300ms connect_timeout", s, body)
	}
	p.WaitLog(t, `route=fast .*status=50[24]`)
}

// TestRouteIdleTimeout: a route's idle_timeout replaces its pool's: a
// server that sends part of a body and goes silent has the stream cut
// on the route with 300ms, while the pool's is a minute.
func TestRouteIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "first part ")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	routes := fmt.Sprintf("upstream slow {\n  server %s\n  idle_timeout 60s\n  retries { attempts 0 }\n}\n"+
		"route quick {\n  match PathPrefix(`/quick`)\n  idle_timeout 300ms\n  to slow\n}\n", hostPort(srv))
	p, base, _ := startEdgeway(t, "", map[string]string{"u.routes": routes})
	c := &http.Client{Timeout: 30 * time.Second}
	res, err := c.Get(base + "/quick")
	if err != nil {
		t.Fatalf("GET /quick: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err == nil || !strings.HasPrefix(string(body), "first part") {
		t.Fatalf("GET /quick: body %q, error %v; want the first part, then the stream cut by its 300ms idle_timeout", body, err)
	}
	p.WaitLog(t, `route=quick`)
}

// TestRoutePolicyExplain: explain prints each effective value and the
// file:line it comes from: the route's own lines, else the pool's block
// or the listener's.
func TestRoutePolicyExplain(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": "listen web {\n  addr 127.0.0.1:8080\n  max_body_bytes 1MiB\n}\n" +
		"upstream u {\n  server 127.0.0.1:1\n  connect_timeout 2s\n}\n" +
		"route own {\n  match PathPrefix(`/own`)\n  connect_timeout 250ms\n  idle_timeout 3s\n  response_timeout 4s\n  max_body_bytes 10KiB\n  retries { attempts 3 }\n  to u\n}\n" +
		"route pools {\n  match PathPrefix(`/pools`)\n  to u\n}\n"})
	c := filepath.Join(dir, "edgeway.conf")
	out, code := runCLI(t, "explain", "-c", c, "GET", "http://localhost:8080/own")
	for _, w := range []string{
		"connect_timeout   250ms  (route " + c + ":11:3)",
		"idle_timeout      3s  (route " + c + ":12:3)",
		"response_timeout  4s  (route " + c + ":13:3)",
		"max_body_bytes    10240 bytes  (route " + c + ":14:3)",
		"retries           3  (route " + c + ":15:3)",
	} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("explain /own (exit %d) lacks %q:\n%s", code, w, out)
		}
	}
	out, code = runCLI(t, "explain", "-c", c, "GET", "http://localhost:8080/pools")
	for _, w := range []string{
		"connect_timeout   2s  (upstream u " + c + ":5:1)",
		"response_timeout  1m0s  (upstream u " + c + ":5:1)",
		"retries           1  (upstream u " + c + ":5:1)",
		"max_body_bytes    1048576 bytes  (listener web " + c + ":1:1)",
	} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("explain /pools (exit %d) lacks %q:\n%s", code, w, out)
		}
	}
}

// TestSplitExplain: explain names a split route's pools with their
// shares.
func TestSplitExplain(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": "listen web { addr 127.0.0.1:8080 }\n" +
		"upstream v1 { server 127.0.0.1:1 }\nupstream v2 { server 127.0.0.1:2 }\n" +
		"route canary {\n  match PathPrefix(`/`)\n  to v1 99.5%, v2 0.5%\n}\n"})
	out, code := runCLI(t, "explain", "-c", filepath.Join(dir, "edgeway.conf"), "GET", "http://localhost:8080/x")
	if first, _, _ := strings.Cut(out, "\n"); code != 0 || first != "route canary -> split v1 99.5%, v2 0.5%" {
		t.Errorf("explain: exit %d\n%s\nwant the first line route canary -> split v1 99.5%%, v2 0.5%%", code, out)
	}
}
