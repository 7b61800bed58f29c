package router

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/routes/rule"
)

// testRoute builds a route from rule text, as conf.Load would.
func testRoute(t testing.TB, name, text, up string, mws ...conf.Middleware) conf.Route {
	t.Helper()
	r, err := rule.Parse(rule.HTTP, text)
	if err != nil {
		t.Fatalf("rule %q: %v", text, err)
	}
	return conf.Route{Name: name, Rule: r, RuleText: text, Priority: r.DefaultPriority(),
		Upstream: up, Middlewares: mws}
}

// testUpstream is an upstream block over the given servers (weight 1 each
// unless weights are given).
func testUpstream(name string, addrs []string, weights ...int) conf.Upstream {
	u := conf.Upstream{Name: name, ConnectTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, MaxIdleConns: 16}
	for i, a := range addrs {
		w := 1
		if i < len(weights) {
			w = weights[i]
		}
		u.Servers = append(u.Servers, conf.Server{Addr: a, Weight: w})
	}
	return u
}

func testListener(trusted ...string) conf.Listener {
	l := conf.Listener{Name: "web", Normalize: true, NotFoundBody: "nothing here\n"}
	for _, p := range trusted {
		l.TrustedProxies = append(l.TrustedProxies, netip.MustParsePrefix(p))
	}
	return l
}

// backend starts an upstream that answers with its id in X-Upstream and the
// request line and headers it received echoed back as headers.
func backend(t testing.TB, id string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", id)
		w.Header().Set("X-Got-Uri", r.RequestURI)
		for k, v := range r.Header {
			w.Header()["X-Got-"+k] = v
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, id)
	}))
	t.Cleanup(s.Close)
	return s
}

func addr(s *httptest.Server) string { return s.Listener.Addr().String() }

// front applies cfg to a new router and serves its "web" handler.
func front(t testing.TB, cfg *conf.Config, opts Options) (*Router, *httptest.Server) {
	t.Helper()
	rt := New(opts)
	if err := rt.Apply(cfg); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	s := httptest.NewServer(rt.Handler("web"))
	t.Cleanup(func() { s.Close(); rt.Close() })
	return rt, s
}

// do sends a request and returns the response with its body read.
func do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	if c == nil {
		c = noRedirect
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
	return http.ErrUseLastResponse
}}

func newReq(t testing.TB, method, url string, hdr ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return req
}
