package router

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

func TestRouting(t *testing.T) {
	t.Parallel()
	a, b, c := backend(t, "a"), backend(t, "b"), backend(t, "c")
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{
			testUpstream("a", []string{addr(a)}), testUpstream("b", []string{addr(b)}),
			testUpstream("c", []string{addr(c)}),
		},
		Routes: []conf.Route{
			testRoute(t, "host", "Host(`a.example`)", "a"),
			testRoute(t, "api", "Host(`b.example`) && PathPrefix(`/api`)", "b"),
			testRoute(t, "hdr", "Header(`X-Env`, `canary`)", "c"),
			testRoute(t, "other", "Host(`other.example`)", "a", conf.Middleware{Kind: conf.Respond}),
		},
	}
	_, fe := front(t, cfg, Options{})
	tests := []struct {
		desc     string
		req      []string // path, then header pairs
		status   int
		upstream string
		body     string
	}{
		{desc: "by host", req: []string{"/x", "Host", "A.example:80"}, status: 200, upstream: "a"},
		{desc: "by host and path", req: []string{"/api/v1", "Host", "b.example"}, status: 200, upstream: "b"},
		{desc: "path prefix miss", req: []string{"/web", "Host", "b.example"}, status: 404, body: "nothing here\n"},
		{desc: "by header", req: []string{"/", "Host", "z.example", "X-Env", "canary"}, status: 200, upstream: "c"},
		{desc: "no route", req: []string{"/", "Host", "z.example"}, status: 404, body: "nothing here\n"},
		{desc: "connection-listed header hidden from rules", req: []string{"/", "Host", "z.example", "X-Env", "canary", "Connection", "X-Env"}, status: 404, body: "nothing here\n"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, nil, newReq(t, "GET", fe.URL+tc.req[0], tc.req[1:]...))
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("X-Upstream"); got != tc.upstream {
				t.Errorf("upstream = %q, want %q", got, tc.upstream)
			}
			if tc.body != "" && body != tc.body {
				t.Errorf("body = %q, want %q", body, tc.body)
			}
		})
	}
}

func TestBalancing(t *testing.T) {
	t.Parallel()
	a, b := backend(t, "a"), backend(t, "b")
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(a), addr(b)}, 2, 1), testUpstream("none", []string{addr(a)}, 0)},
		Routes: []conf.Route{
			testRoute(t, "all", "PathPrefix(`/`)", "u"),
			testRoute(t, "none", "PathPrefix(`/none`)", "none"),
		},
	}
	_, fe := front(t, cfg, Options{})
	var got []string
	for range 6 {
		resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/"))
		got = append(got, resp.Header.Get("X-Upstream"))
	}
	if s := strings.Join(got, ""); s != "abaaba" {
		t.Errorf("sequence = %q, want abaaba", s)
	}
	resp, body := do(t, nil, newReq(t, "GET", fe.URL+"/none"))
	if resp.StatusCode != http.StatusServiceUnavailable || body != "Service Unavailable\n" {
		t.Errorf("weight 0 pool: %d %q, want 503", resp.StatusCode, body)
	}
}

func TestMiddlewares(t *testing.T) {
	t.Parallel()
	a := backend(t, "a")
	mw := func(kind conf.MiddlewareKind, name, arg string, code int) conf.Middleware {
		return conf.Middleware{Kind: kind, Name: name, Arg: arg, Code: code}
	}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(a)})},
		Routes: []conf.Route{
			testRoute(t, "strip", "PathPrefix(`/strip`)", "a", mw(conf.StripPrefix, "", "/strip", 0)),
			testRoute(t, "add", "PathPrefix(`/add`)", "a", mw(conf.AddPrefix, "", "/v2", 0)),
			testRoute(t, "both", "PathPrefix(`/both`)", "a", mw(conf.StripPrefix, "", "/both", 0), mw(conf.AddPrefix, "", "/in/", 0)),
			testRoute(t, "hdr", "PathPrefix(`/hdr`)", "a",
				mw(conf.SetRequestHeader, "X-Added", "yes", 0), mw(conf.RemoveRequestHeader, "X-Secret", "", 0),
				mw(conf.SetResponseHeader, "X-Served-By", "edgeway", 0), mw(conf.RemoveResponseHeader, "X-Upstream", "", 0)),
			testRoute(t, "redir", "PathPrefix(`/old`)", "",
				mw(conf.SetResponseHeader, "X-Moved", "1", 0), mw(conf.Redirect, "", "https://example.com$path", 308)),
			testRoute(t, "redirq", "PathPrefix(`/q`)", "", mw(conf.Redirect, "", "https://example.com/n?x=1&$query", 301)),
			testRoute(t, "respond", "Path(`/health`)", "", mw(conf.Respond, "", "ok\n", 200)),
		},
	}
	_, fe := front(t, cfg, Options{})
	tests := []struct {
		desc   string
		path   string
		hdr    []string
		status int
		want   map[string]string // response headers; "" means absent
		body   string
	}{
		{desc: "strip prefix", path: "/strip/x?a=1", status: 200, want: map[string]string{"X-Got-Uri": "/x?a=1"}},
		{desc: "strip to root", path: "/strip", status: 200, want: map[string]string{"X-Got-Uri": "/"}},
		{desc: "add prefix", path: "/add/x", status: 200, want: map[string]string{"X-Got-Uri": "/v2/add/x"}},
		{desc: "strip then add, escapes kept", path: "/both/a%2Fb", status: 200, want: map[string]string{"X-Got-Uri": "/in/a%2Fb"}},
		{desc: "normalised path forwarded", path: "/strip/a/../b//c", status: 200, want: map[string]string{"X-Got-Uri": "/b/c"}},
		{desc: "headers both ways", path: "/hdr", hdr: []string{"X-Secret", "s", "X-Kept", "k"}, status: 200, want: map[string]string{
			"X-Got-X-Added": "yes", "X-Got-X-Secret": "", "X-Got-X-Kept": "k", "X-Served-By": "edgeway", "X-Upstream": ""}},
		{desc: "redirect with path and query", path: "/old/p?a=b", status: 308, want: map[string]string{
			"Location": "https://example.com/old/p?a=b", "X-Moved": "1"}},
		{desc: "redirect with $query", path: "/q?z=9", status: 301, want: map[string]string{"Location": "https://example.com/n?x=1&z=9"}},
		{desc: "respond", path: "/health", status: 200, want: map[string]string{"Content-Type": "text/plain; charset=utf-8"}, body: "ok\n"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			resp, body := do(t, nil, newReq(t, "GET", fe.URL+tc.path, tc.hdr...))
			if resp.StatusCode != tc.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.status)
			}
			for k, v := range tc.want {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tc.body != "" && body != tc.body {
				t.Errorf("body = %q, want %q", body, tc.body)
			}
		})
	}
}

// TestOddTargetsRefused sends raw request targets that must be answered
// 400 by edgeway, not routed: a '#' (which Go's server would escape to %23;
// docs/rules.md §3.1 step 1) and an opaque target with no path.
func TestOddTargetsRefused(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`) || Host(`x`)", "a")},
	}
	_, fe := front(t, cfg, Options{})
	for _, target := range []string{"/a#b", "a:0"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Upstream") != "" {
			t.Errorf("%s: status %d from %q, want 400 from edgeway", target, resp.StatusCode, resp.Header.Get("X-Upstream"))
		}
	}
}

// TestHTTP10WithoutHost checks that an HTTP/1.0 request without a Host
// header reaches the upstream naming the address the client connected to,
// not the upstream's own address.
func TestHTTP10WithoutHost(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host)
	}))
	t.Cleanup(up.Close)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")},
	}
	_, fe := front(t, cfg, Options{})
	listenAddr := strings.TrimPrefix(fe.URL, "http://")
	c, err := net.Dial("tcp", listenAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != listenAddr {
		t.Fatalf("upstream saw Host %q, want the listener's %q (upstream is %s)", body, listenAddr, addr(up))
	}
}
