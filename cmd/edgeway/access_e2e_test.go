package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestAccessListFileReloaded: a route's deny list from a file refuses its
// clients with 403; editing the file reloads it like a route file (the
// watcher sees it), and a bad line is refused at file:line:col with the
// old lists kept.
func TestAccessListFileReloaded(t *testing.T) {
	up := backend(t, "up")
	routes := "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  deny file lists/deny.txt\n  to u\n}\n"
	dir := t.TempDir()
	list := filepath.Join(dir, "lists", "deny.txt")
	testutil.WriteFiles(t, dir, map[string]string{"lists/deny.txt": "# nobody yet\n192.0.2.1\n"})
	p, base, _ := startEdgewayIn(t, dir, "", map[string]string{"r.routes": routes})
	status := func() string {
		out, _ := testutil.Curl(t, "-s", "-o", "/dev/null", "-w", "%{http_code}", base+"/x")
		return out
	}
	if got := status(); got != "200" {
		t.Fatalf("before the list names the client: %s", got)
	}
	os.WriteFile(list, []byte("192.0.2.1\n127.0.0.0/8 # the tests\n"), 0o644)
	testutil.Eventually(t, 10*time.Second, func() bool { return status() == "403" }, "the edited list was not applied")
	p.WaitLog(t, `msg=request log=access .* path=/x .* status=403 .* route=r `)

	os.WriteFile(list, []byte("127.0.0.0/8\n  10.0.0.x\n"), 0o644)
	p.WaitLog(t, `reload refused.*r\.routes:4:13 err="deny: .*lists/deny\.txt:2:3: invalid address \\"10\.0\.0\.x`)
	if got := status(); got != "403" {
		t.Errorf("a refused reload changed the lists: %s", got)
	}
	if strings.Contains(p.Log(), "panic") {
		t.Errorf("panic in the log:\n%s", p.Log())
	}
}

// TestCORSOverTheWire: over HTTP/1.1 and h2c, a preflight is answered by
// edgeway and an allowed origin's request carries the route's CORS fields.
func TestCORSOverTheWire(t *testing.T) {
	up := backend(t, "up")
	routes := "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  cors { origins https://app.example; methods GET PUT; headers x-token; credentials on; max_age 1m }\n  to u\n}\n"
	_, base, _ := startEdgeway(t, "", map[string]string{"r.routes": routes})
	for _, proto := range [][]string{{"--http1.1"}, {"--http2-prior-knowledge"}} {
		out, code := testutil.Curl(t, append(proto, "-s", "-i", "-X", "OPTIONS", "-H", "Origin: https://app.example",
			"-H", "Access-Control-Request-Method: PUT", "-H", "Access-Control-Request-Headers: X-Token", base+"/x")...)
		for _, want := range []string{" 204", "access-control-allow-origin: https://app.example", "access-control-allow-methods: GET, PUT",
			"access-control-allow-headers: X-Token", "access-control-allow-credentials: true", "access-control-max-age: 60"} {
			if code != 0 || !strings.Contains(strings.ToLower(out), strings.ToLower(want)) {
				t.Errorf("%v preflight: no %q in:\n%s", proto, want, out)
			}
		}
		out, _ = testutil.Curl(t, append(proto, "-s", "-i", "-H", "Origin: https://app.example", base+"/x")...)
		if !strings.Contains(strings.ToLower(out), "access-control-allow-origin: https://app.example") || !strings.Contains(out, "up ") {
			t.Errorf("%v GET: no allowed origin or no upstream answer in:\n%s", proto, out)
		}
	}
}

// TestErrorPageFileReloaded: a listener's error page from a file is what
// a client gets for edgeway's own 404 (over HTTP/1.1 and h2c), and an
// edited page is served after the watcher's reload.
func TestErrorPageFileReloaded(t *testing.T) {
	up := backend(t, "up")
	dir := t.TempDir()
	page := filepath.Join(dir, "errors", "404.html")
	testutil.WriteFiles(t, dir, map[string]string{"errors/404.html": "<h1>$status: nothing at this address</h1>\n"})
	routes := "upstream u { server " + hostPort(up) + " }\nroute r {\n  match PathPrefix(`/app`)\n  to u\n}\n"
	_, base, _ := startEdgewayIn(t, dir, "", map[string]string{"r.routes": routes})
	// error_page is a live listener setting: adding it to the listen
	// block of the running configuration applies on the watcher's reload.
	main := filepath.Join(dir, "edgeway.conf")
	text, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(text), "read_header_timeout 2s", "read_header_timeout 2s\n  error_page 404 file errors/404.html", 1)), 0o644)
	get := func(proto string) string {
		out, _ := testutil.Curl(t, proto, "-s", "-i", base+"/none")
		return out
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(get("--http1.1"), "<h1>404: nothing at this address</h1>") }, "the page was not served")
	if out := get("--http2-prior-knowledge"); !strings.Contains(out, "<h1>404: nothing") || !strings.Contains(strings.ToLower(out), "content-type: text/html") {
		t.Errorf("h2c: %s", out)
	}
	os.WriteFile(page, []byte("<h1>gone fishing</h1>\n"), 0o644)
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(get("--http1.1"), "gone fishing") }, "the edited page was not served")
}

// TestExplainPolicies: explain lists the policies a request meets and
// says when a client's address is refused, and by which lists.
func TestExplainPolicies(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"e.conf": "listen web {\n  addr 127.0.0.1:8080\n  deny 192.0.2.0/24\n}\n" +
		"upstream up { server 127.0.0.1:80 }\n" +
		"limit l { rate 10/s }\n" +
		"route r {\n  match PathPrefix(`/`)\n  allow 10.0.0.0/8\n  cors { origins https://a.test }\n  limit l\n  error_page 502 \"down\"\n  to up\n}\n"})
	c := filepath.Join(dir, "e.conf")
	// Routes that outrank r but do not match are listed as tried first.
	text, _ := os.ReadFile(c)
	os.WriteFile(c, append(text, "route a { match Path(`/admin/long/path`)\n to up }\nroute b { match Host(`bbbb.test`)\n to up }\n"...), 0o644)
	if out, code := runCLI(t, "explain", "-c", c, "--client-ip", "10.1.2.3", "GET", "http://localhost:8080/x"); code != 0 ||
		!strings.Contains(out, "  tried     a, b (before it; they did not match)\n") {
		t.Errorf("tried routes: %q exit %d", out, code)
	}
	for _, tc := range []struct {
		ip, first string
	}{
		{"10.1.2.3", "route r -> upstream up\n"},
		{"192.0.2.9", "route r -> denied 403 by the listener's access lists\n"},
		{"198.51.100.1", "route r -> denied 403 by the route's access lists\n"},
	} {
		out, code := runCLI(t, "explain", "-c", c, "--client-ip", tc.ip, "GET", "http://localhost:8080/x")
		if code != 0 || !strings.HasPrefix(out, tc.first) || !strings.Contains(out, "  policies  listener allow/deny, allow/deny, cors, limit l, error_page\n") {
			t.Errorf("client %s: %q exit %d, want first line %q and the policies", tc.ip, out, code, tc.first)
		}
	}
}

// TestRateLimitOverTheWire: a limit per client address refuses past its
// burst with 429 and Retry-After, and counts in the metrics.
func TestRateLimitOverTheWire(t *testing.T) {
	up := backend(t, "up")
	e := startAdmin(t, "", map[string]string{"r.routes": "limit api { rate 1/h; burst 3 }\nupstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  limit api\n  to u\n}\n"})
	var codes []string
	start := time.Now()
	for range 5 {
		out, _ := testutil.Curl(t, "-s", "-o", "/dev/null", "-w", "%{http_code} %header{retry-after}", e.base+"/x")
		codes = append(codes, out)
	}
	got := strings.Join(codes, ",")
	if strings.Join(codes[:3], ",") != "200 ,200 ,200 " {
		t.Errorf("statuses and Retry-After: %s, want three 200s first", got)
	}
	for _, c := range codes[3:] {
		status, retry, _ := strings.Cut(c, " ")
		if err := testutil.RetryAfterWithin(retry, time.Hour, start); status != "429" || err != nil {
			t.Errorf("statuses and Retry-After: %s, want two 429s: %v", got, err)
		}
	}
	if v := e.metric(t, `edgeway_ratelimit_requests_total{limit="api",result="limited"}`); v != "2" {
		t.Errorf("limited count %q, want 2", v)
	}
}
