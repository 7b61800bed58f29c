package router

import (
	"io"
	"net"
	"net/http/httptest"
	"net/url"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/stdhttp"
)

// TestRedirectHTTPSRoute serves a route with redirect_https over plain
// HTTP and over TLS: the first is redirected, the second reaches the
// upstream.
func TestRedirectHTTPSRoute(t *testing.T) {
	t.Parallel()
	be := backend(t, "app")
	tests := []struct {
		desc     string
		mws      []conf.Middleware
		host     string
		target   string
		code     int
		location string
		header   [2]string // a response header the redirect must carry
	}{
		{desc: "default code and port", mws: []conf.Middleware{{Kind: conf.RedirectHTTPS, Code: 308}},
			host: "shop.example", target: "/cart/items?id=7&x=%2F", code: 308, location: "https://shop.example/cart/items?id=7&x=%2F"},
		{desc: "port of the request dropped", mws: []conf.Middleware{{Kind: conf.RedirectHTTPS, Code: 301}},
			host: "shop.example:8080", target: "/", code: 301, location: "https://shop.example/"},
		{desc: "https port written", mws: []conf.Middleware{{Kind: conf.RedirectHTTPS, Code: 302, Arg: "8443"}},
			host: "shop.example:8080", target: "/a", code: 302, location: "https://shop.example:8443/a"},
		{desc: "IPv6 host", mws: []conf.Middleware{{Kind: conf.RedirectHTTPS, Code: 307}},
			host: "[2001:db8::1]:80", target: "/a?b", code: 307, location: "https://[2001:db8::1]/a?b"},
		{desc: "path as sent, before rewriting", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/cart"}, {Kind: conf.RedirectHTTPS, Code: 308}},
			host: "shop.example", target: "/cart/x", code: 308, location: "https://shop.example/cart/x"},
		{desc: "response headers applied", mws: []conf.Middleware{{Kind: conf.SetResponseHeader, Name: "X-Frame-Options", Arg: "DENY"}, {Kind: conf.RedirectHTTPS, Code: 308}},
			host: "shop.example", target: "/", code: 308, location: "https://shop.example/", header: [2]string{"X-Frame-Options", "DENY"}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := &conf.Config{Listeners: []conf.Listener{testListener()},
				Upstreams: []conf.Upstream{testUpstream("app", []string{addr(be)})},
				Routes:    []conf.Route{testRoute(t, "shop", "PathPrefix(`/`)", "app", tc.mws...)}}
			rt, plain := front(t, cfg, Options{})
			resp, body := do(t, nil, newReq(t, "GET", plain.URL+tc.target, "Host", tc.host))
			if resp.StatusCode != tc.code || resp.Header.Get("Location") != tc.location {
				t.Errorf("plain HTTP: %d Location %q, want %d %q (body %q)", resp.StatusCode, resp.Header.Get("Location"), tc.code, tc.location, body)
			}
			if resp.Header.Get("X-Upstream") != "" {
				t.Error("plain HTTP request reached the upstream")
			}
			if k := tc.header[0]; k != "" && resp.Header.Get(k) != tc.header[1] {
				t.Errorf("%s = %q, want %q", k, resp.Header.Get(k), tc.header[1])
			}
			secure := httptest.NewTLSServer(rt.Handler("web"))
			t.Cleanup(secure.Close)
			c := secure.Client()
			c.CheckRedirect = noRedirect.CheckRedirect
			resp, body = do(t, c, newReq(t, "GET", secure.URL+tc.target, "Host", tc.host))
			if resp.StatusCode != 200 || body != "app" {
				t.Errorf("over TLS: %d %q, want the upstream's 200", resp.StatusCode, body)
			}
		})
	}
}

// TestRedirectHTTPSBeforeAnswer puts redirect_https with a respond line,
// in either order: plain HTTP is redirected, TLS gets the answer.
func TestRedirectHTTPSBeforeAnswer(t *testing.T) {
	t.Parallel()
	for _, order := range [][]conf.Middleware{
		{{Kind: conf.RedirectHTTPS, Code: 308}, {Kind: conf.Respond, Code: 200, Arg: "secure\n"}},
		{{Kind: conf.Respond, Code: 200, Arg: "secure\n"}, {Kind: conf.RedirectHTTPS, Code: 308}},
	} {
		cfg := &conf.Config{Listeners: []conf.Listener{testListener()},
			Routes: []conf.Route{testRoute(t, "r", "PathPrefix(`/`)", "", order...)}}
		rt, plain := front(t, cfg, Options{})
		resp, _ := do(t, nil, newReq(t, "GET", plain.URL+"/x", "Host", "a.example"))
		if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://a.example/x" {
			t.Errorf("%s first: plain HTTP got %d %q", order[0].Kind, resp.StatusCode, resp.Header.Get("Location"))
		}
		secure := httptest.NewTLSServer(rt.Handler("web"))
		resp, body := do(t, secure.Client(), newReq(t, "GET", secure.URL+"/x", "Host", "a.example"))
		secure.Close()
		if resp.StatusCode != 200 || body != "secure\n" {
			t.Errorf("%s first: TLS got %d %q", order[0].Kind, resp.StatusCode, body)
		}
	}
}

// TestRedirectHTTPSListener serves the listener shortcut on a real socket:
// every request, whatever its method, path or body, gets the same 308.
func TestRedirectHTTPSListener(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		port     int
		method   string
		host     string
		target   string
		location string
	}{
		{desc: "443 left out", port: 443, method: "GET", host: "www.example.com:80", target: "/a/b?c=d", location: "https://www.example.com/a/b?c=d"},
		{desc: "0 is 443", port: 0, method: "GET", host: "www.example.com", target: "/", location: "https://www.example.com/"},
		{desc: "other port", port: 8443, method: "POST", host: "www.example.com:8080", target: "/form", location: "https://www.example.com:8443/form"},
		{desc: "IP address", port: 443, method: "HEAD", host: "192.0.2.7", target: "/x?", location: "https://192.0.2.7/x"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			s := httptest.NewServer(stdhttp.Handler(RedirectHTTPS(tc.port)))
			t.Cleanup(s.Close)
			req := newReq(t, tc.method, s.URL+tc.target, "Host", tc.host)
			if tc.method == "POST" {
				req.Body, req.ContentLength = io.NopCloser(strings.NewReader("a=1")), 3
			}
			resp, body := do(t, nil, req)
			if resp.StatusCode != 308 || resp.Header.Get("Location") != tc.location || body != "" {
				t.Errorf("got %d Location %q body %q, want 308 %q", resp.StatusCode, resp.Header.Get("Location"), body, tc.location)
			}
		})
	}
}

// TestRedirectHTTPSListenerNoHost sends an HTTP/1.0 request without Host:
// there is nothing to redirect to, so the answer is 400.
func TestRedirectHTTPSListenerNoHost(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(stdhttp.Handler(RedirectHTTPS(443)))
	t.Cleanup(s.Close)
	c, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("GET /x HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	if got := string(buf[:n]); !strings.HasPrefix(got, "HTTP/1.0 400 ") || strings.Contains(got, "Location") {
		t.Errorf("answer = %q, want a 400 without Location", got)
	}
}

// TestHTTPSLocation covers the Host values a client can send.
func TestHTTPSLocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, port, path, query string
		want                    string // "" when refused
	}{
		{host: "Example.COM", path: "/p", want: "https://Example.COM/p"},
		{host: "example.com:", path: "/p", want: "https://example.com/p"},
		{host: "example.com:80", port: ":8443", path: "/p", query: "q=1", want: "https://example.com:8443/p?q=1"},
		{host: "[::1]", path: "/", want: "https://[::1]/"},
		{host: "[::1]:8080", path: "", want: "https://[::1]/"},
		{host: "10.0.0.1:80", path: "/", want: "https://10.0.0.1/"},
		{host: ""},
		{host: ":80"},
		{host: "evil.com/x"},
		{host: "user@evil.com"},
		{host: "evil.com?x"},
		{host: "evil.com#x"},
		{host: "a b"},
		{host: "example.com:8o"},
		{host: "[::1"},
		{host: "[::1]x"},
		{host: "[10.0.0.1]"},
		{host: "[fe80::1%25eth0]"},
		{host: "example.com:80:80"},
	}
	for _, tc := range tests {
		got, ok := appendHTTPSLocation(nil, tc.host, tc.port, tc.path, tc.query)
		if tc.want == "" && ok {
			t.Errorf("host %q accepted: %q", tc.host, got)
		}
		if tc.want != "" && (!ok || string(got) != tc.want) {
			t.Errorf("host %q: %q %v, want %q", tc.host, got, ok, tc.want)
		}
	}
}

// FuzzHTTPSLocation checks that a Location built from any Host names
// exactly that host over https, so a client's Host cannot move the
// redirect to another authority or add userinfo, and that the path and
// query survive.
func FuzzHTTPSLocation(f *testing.F) {
	f.Add("example.com:8080", "/a/b", "x=1")
	f.Add("[::1]:80", "/", "")
	f.Add("evil.com@good.com", "/", "")
	f.Fuzz(func(t *testing.T, host, path, query string) {
		// path and query as a request target can hold them
		visible := func(r rune) rune {
			if r <= ' ' || r >= 0x7f || r == '#' {
				return -1
			}
			return r
		}
		path = "/" + strings.Map(visible, strings.NewReplacer("?", "", "%", "").Replace(path))
		query = strings.Map(visible, query)
		loc, ok := appendHTTPSLocation(nil, host, ":8443", path, query)
		if !ok {
			return
		}
		u, err := url.Parse(string(loc))
		if err != nil {
			t.Fatalf("Location %q does not parse: %v", loc, err)
		}
		want, _, _ := strings.Cut(host, "]")
		want = strings.TrimPrefix(want, "[")
		if !strings.HasPrefix(host, "[") {
			want, _, _ = strings.Cut(host, ":")
		}
		if u.Scheme != "https" || u.User != nil || u.Hostname() != want || u.Port() != "8443" || u.Path != path {
			t.Errorf("host %q path %q: Location %q parses as %#v", host, path, loc, u)
		}
	})
}

// recorder is an httpmsg.ResponseWriter that keeps the head.
type recorder struct {
	discardProxyWriter
	status int
	hdr    httpmsg.Header
}

func (r *recorder) WriteHead(code int, h httpmsg.Header, _ int64) error {
	r.status, r.hdr = code, append(r.hdr[:0], h...)
	return nil
}

// TestRedirectHTTPSAllocs holds the listener shortcut to no allocation
// per request once its scratch space is warm.
func TestRedirectHTTPSAllocs(t *testing.T) {
	skipUnderRace(t)
	h := RedirectHTTPS(8443)
	req := &httpmsg.Request{Method: "GET", Target: "/some/path?q=1", Host: "example.com:80", ProtoMajor: 1, ProtoMinor: 1}
	w := &recorder{hdr: make(httpmsg.Header, 0, 4)}
	h.ServeProxy(w, req)
	if w.status != 308 || w.hdr.Get("Location") != "https://example.com:8443/some/path?q=1" {
		t.Fatalf("answer %d %v", w.status, w.hdr)
	}
	if n := testing.AllocsPerRun(100, func() { h.ServeProxy(w, req) }); n > 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
}

// TestNewHTTPSRedirect refuses what conf would never produce.
func TestNewHTTPSRedirect(t *testing.T) {
	t.Parallel()
	if h, err := newHTTPSRedirect(0, ""); err != nil || h.code != 308 || h.port != "" {
		t.Errorf("defaults: %+v %v", h, err)
	}
	if h, err := newHTTPSRedirect(301, "443"); err != nil || h.port != "" {
		t.Errorf("port 443: %+v %v", h, err)
	}
	for _, bad := range []struct {
		code int
		port string
	}{{200, ""}, {308, "0"}, {308, "x"}, {308, "70000"}} {
		if _, err := newHTTPSRedirect(bad.code, bad.port); err == nil {
			t.Errorf("newHTTPSRedirect(%d, %q) accepted", bad.code, bad.port)
		}
	}
	if _, err := compileChain([]conf.Middleware{{Kind: conf.RedirectHTTPS, Code: 200}}); err == nil {
		t.Error("compileChain accepted redirect_https 200")
	}
}

// TestRedirectHTTPSRouteAllocs holds the route middleware to one
// allocation per redirected request: the request ID, a heap string since
// an HTTP/2 server may write the head after the handler returns.
func TestRedirectHTTPSRouteAllocs(t *testing.T) {
	skipUnderRace(t)
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()},
		Routes: []conf.Route{testRoute(t, "r", "PathPrefix(`/`)", "", conf.Middleware{Kind: conf.RedirectHTTPS, Code: 301, Arg: "8443"},
			conf.Middleware{Kind: conf.Respond, Code: 200})}}
	rt := New(Options{})
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	h := rt.Proxy("web")
	req := &httpmsg.Request{Method: "GET", Target: "/a?b=c", Host: "example.com", ProtoMajor: 1, ProtoMinor: 1}
	w := &recorder{hdr: make(httpmsg.Header, 0, 4)}
	h.ServeProxy(w, req)
	if w.status != 301 || w.hdr.Get("Location") != "https://example.com:8443/a?b=c" {
		t.Fatalf("answer %d %v", w.status, w.hdr)
	}
	if n := testing.AllocsPerRun(100, func() { h.ServeProxy(w, req) }); n > 1 {
		t.Errorf("%v allocations per request, want 1 (the request ID)", n)
	}
}

// skipUnderRace skips an allocation count: the race detector makes
// sync.Pool drop items at random, so the count means nothing under it.
func skipUnderRace(t *testing.T) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" && s.Value == "true" {
				t.Skip("allocation counts are not meaningful with -race")
			}
		}
	}
}
