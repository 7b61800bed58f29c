package router

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// TestCORS: preflights are answered at the edge (the upstream sees none),
// allowed origins get the route's CORS fields on every answer, others get
// none, and the upstream's own CORS fields never reach the browser.
func TestCORS(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Access-Control-Allow-Origin", "*") // the upstream's own, replaced
		w.Header().Set("Vary", "Accept-Encoding")
	}))
	t.Cleanup(up.Close)
	app := testRoute(t, "app", "PathPrefix(`/api`)", "u")
	app.CORS = &conf.CORS{Origins: []string{"https://app.example"}, Methods: []string{"GET", "POST", "PUT"},
		Headers: []string{"X-Token"}, ExposeHeaders: []string{"X-Request-Id"}, Credentials: true, MaxAge: 10 * time.Minute}
	public := testRoute(t, "public", "PathPrefix(`/public`)", "u")
	public.CORS = &conf.CORS{AnyOrigin: true, Methods: []string{"GET"}}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{app, public},
	}
	_, fe := front(t, cfg, Options{})
	type want struct {
		status                   int
		origin, creds, vary      string
		methods, headers, maxAge string
		expose                   string
		reaches                  bool
	}
	for _, c := range []struct {
		desc, method, path string
		fields             []string
		want               want
	}{
		{"no Origin", "GET", "/api/x", nil, want{status: 200, vary: "Accept-Encoding,Origin", reaches: true}},
		{"allowed origin", "GET", "/api/x", []string{"Origin", "https://app.example"},
			want{status: 200, origin: "https://app.example", creds: "true", vary: "Accept-Encoding,Origin", expose: "X-Request-Id", reaches: true}},
		{"other origin", "GET", "/api/x", []string{"Origin", "https://evil.example"}, want{status: 200, vary: "Accept-Encoding,Origin", reaches: true}},
		{"preflight", "OPTIONS", "/api/x", []string{"Origin", "https://app.example", "Access-Control-Request-Method", "PUT", "Access-Control-Request-Headers", "x-token"},
			want{status: 204, origin: "https://app.example", creds: "true", vary: "Origin,Access-Control-Request-Method, Access-Control-Request-Headers",
				methods: "GET, POST, PUT", headers: "X-Token", maxAge: "600", expose: "X-Request-Id"}},
		{"preflight, method not allowed", "OPTIONS", "/api/x", []string{"Origin", "https://app.example", "Access-Control-Request-Method", "DELETE"}, want{status: 403, vary: "Origin"}},
		{"preflight, header not allowed", "OPTIONS", "/api/x", []string{"Origin", "https://app.example", "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "x-token, x-other"}, want{status: 403, vary: "Origin"}},
		{"preflight, origin not allowed", "OPTIONS", "/api/x", []string{"Origin", "https://evil.example", "Access-Control-Request-Method", "GET"}, want{status: 403, vary: "Origin"}},
		{"plain OPTIONS goes upstream", "OPTIONS", "/api/x", []string{"Origin", "https://app.example"},
			want{status: 200, origin: "https://app.example", creds: "true", vary: "Accept-Encoding,Origin", expose: "X-Request-Id", reaches: true}},
		{"any origin", "GET", "/public/x", []string{"Origin", "https://whoever.example"}, want{status: 200, origin: "*", vary: "Accept-Encoding", reaches: true}},
	} {
		before := reached.Load()
		r, _ := do(t, nil, newReq(t, c.method, fe.URL+c.path, c.fields...))
		got := want{status: r.StatusCode, origin: r.Header.Get("Access-Control-Allow-Origin"), creds: r.Header.Get("Access-Control-Allow-Credentials"),
			vary: joinComma(r.Header.Values("Vary")), methods: r.Header.Get("Access-Control-Allow-Methods"), headers: r.Header.Get("Access-Control-Allow-Headers"),
			maxAge: r.Header.Get("Access-Control-Max-Age"), expose: r.Header.Get("Access-Control-Expose-Headers"), reaches: reached.Load() > before}
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.desc, got, c.want)
		}
		if n := len(r.Header.Values("Access-Control-Allow-Origin")); n > 1 {
			t.Errorf("%s: %d Access-Control-Allow-Origin fields", c.desc, n)
		}
	}
}

func joinComma(vs []string) string {
	vs = slices.Clone(vs)
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}
