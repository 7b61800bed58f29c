package admin

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestProbes(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, Options{})
	if r := call(t, http.MethodGet, base+"/healthz", ""); r.status != 200 || r.body != "ok\n" {
		t.Fatalf("healthz: %d %q", r.status, r.body)
	}
	steps := []struct {
		desc   string
		do     func()
		status int
		body   string
	}{
		{desc: "starting", do: func() {}, status: 503, body: "starting\n"},
		{desc: "ready", do: s.SetReady, status: 200, body: "ready\n"},
		{desc: "draining", do: s.SetDraining, status: 503, body: "shutting down\n"},
		{desc: "ready again is ignored", do: s.SetReady, status: 503, body: "shutting down\n"},
	}
	for _, st := range steps {
		st.do()
		if r := call(t, http.MethodGet, base+"/readyz", ""); r.status != st.status || r.body != st.body {
			t.Fatalf("%s: readyz %d %q, want %d %q", st.desc, r.status, r.body, st.status, st.body)
		}
	}
}

func TestJSONErrors(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, allOptions(&fakeState{}))
	tests := []struct {
		desc, method, path string
		status             int
		allow, msg         string
	}{
		{desc: "unknown api path", method: "GET", path: "/api/nope", status: 404, msg: "not found: /api/nope"},
		{desc: "unknown path", method: "GET", path: "/nope", status: 404, msg: "not found"},
		{desc: "POST to a GET endpoint", method: "POST", path: "/api/routes", status: 405, allow: "GET, HEAD", msg: "method POST not allowed"},
		{desc: "GET to reload", method: "GET", path: "/api/reload", status: 405, allow: "POST", msg: "allowed: POST"},
		{desc: "DELETE healthz", method: "DELETE", path: "/healthz", status: 405, allow: "GET, HEAD"},
		{desc: "explain without url", method: "GET", path: "/api/explain", status: 400, msg: "url="},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r := call(t, tc.method, base+tc.path, testToken)
			msg := r.jsonError(t)
			if r.status != tc.status || !strings.Contains(msg, tc.msg) || r.header.Get("Allow") != tc.allow {
				t.Fatalf("status %d, Allow %q, error %q; want %d, %q, %q", r.status, r.header.Get("Allow"), msg, tc.status, tc.allow, tc.msg)
			}
		})
	}
}

func TestRoutesAndConfig(t *testing.T) {
	t.Parallel()
	f := &fakeState{
		routes: []Route{{Name: "api", Kind: "http", Rule: "Host(`a`)", Priority: 9, Listeners: []string{"web"},
			Upstream: "api", Middlewares: []string{"strip_prefix"}, Source: "r.routes:3:1"}},
		status: ConfigStatus{Version: "v1", Generation: 2, Hash: "abc", Files: []File{{Path: "/e.conf", SHA256: "00"}},
			LastReload: &ReloadResult{OK: true, Trigger: "api"}},
	}
	_, base := startServer(t, allOptions(f))
	var routes routeList
	call(t, "GET", base+"/api/routes", testToken).decode(t, &routes)
	if !reflect.DeepEqual(routes.Routes, f.routes) {
		t.Fatalf("routes %+v", routes)
	}
	var st ConfigStatus
	r := call(t, "GET", base+"/api/config", testToken)
	r.decode(t, &st)
	if st.Generation != 2 || st.Hash != "abc" || st.Files[0] != f.status.Files[0] || st.LastReload == nil || !st.LastReload.OK {
		t.Fatalf("config %s", r.body)
	}
	f2 := &fakeState{}
	_, base2 := startServer(t, allOptions(f2))
	if r := call(t, "GET", base2+"/api/routes", testToken); r.status != 200 || !strings.Contains(r.body, `"routes": []`) {
		t.Fatalf("no routes: %d %s", r.status, r.body)
	}
}

func TestExplain(t *testing.T) {
	t.Parallel()
	var got ExplainQuery
	f := &fakeState{explain: func(q ExplainQuery) (Explanation, error) {
		got = q
		switch {
		case q.URL == "bad":
			return Explanation{}, Errorf(http.StatusBadRequest, "bad URL %q", q.URL)
		case q.SNI == "none.test":
			return Explanation{}, ErrNoRoute
		}
		return Explanation{Kind: "http", Route: "api", Upstream: "api", Rule: "Host(`a`)"}, nil
	}}
	_, base := startServer(t, allOptions(f))
	v := url.Values{"url": {"http://a/x"}, "header": {"Host: b", "X-A: 1"}, "client_ip": {"10.0.0.1"}, "listener": {"web"}}
	r := call(t, "GET", base+"/api/explain?"+v.Encode(), testToken)
	var e Explanation
	r.decode(t, &e)
	want := ExplainQuery{Method: "GET", URL: "http://a/x", Headers: []string{"Host: b", "X-A: 1"}, ClientIP: "10.0.0.1", Listener: "web"}
	if r.status != 200 || e.Route != "api" || e.Rule != "Host(`a`)" || !reflect.DeepEqual(got, want) {
		t.Fatalf("status %d body %s; query %+v", r.status, r.body, got)
	}
	r = call(t, "GET", base+"/api/explain?sni=none.test&alpn=h2&alpn=http/1.1", testToken)
	if r.status != 404 || r.jsonError(t) != "no route" || !reflect.DeepEqual(got.ALPN, []string{"h2", "http/1.1"}) {
		t.Fatalf("no route: %d %s; query %+v", r.status, r.body, got)
	}
	r = call(t, "GET", base+"/api/explain?url=bad", testToken)
	if r.status != 400 || !strings.Contains(r.jsonError(t), "bad URL") {
		t.Fatalf("bad url: %d %s", r.status, r.body)
	}
}

func TestReload(t *testing.T) {
	t.Parallel()
	var next func(context.Context) (ReloadResult, error)
	var got ReloadOptions
	f := &fakeState{reload: func(ctx context.Context, opts ReloadOptions) (ReloadResult, error) { got = opts; return next(ctx) }}
	_, base := startServer(t, allOptions(f))
	next = func(context.Context) (ReloadResult, error) { return ReloadResult{OK: true, Generation: 2}, nil }
	for q, want := range map[string]bool{"": false, "?allow_empty=1": true, "?allow_empty=false": false} {
		if r := call(t, "POST", base+"/api/reload"+q, testToken); r.status != 200 || got.AllowEmpty != want {
			t.Errorf("POST /api/reload%s: %d, AllowEmpty %v, want %v", q, r.status, got.AllowEmpty, want)
		}
	}
	if r := call(t, "POST", base+"/api/reload?allow_empty=yes", testToken); r.status != 400 || !strings.Contains(r.jsonError(t), "allow_empty") {
		t.Errorf("allow_empty=yes: %d %s", r.status, r.body)
	}
	var res ReloadResult
	r := call(t, "POST", base+"/api/reload", testToken)
	r.decode(t, &res)
	if r.status != 200 || !res.OK || res.Generation != 2 {
		t.Fatalf("ok reload: %d %s", r.status, r.body)
	}
	next = func(context.Context) (ReloadResult, error) {
		return ReloadResult{Error: "reload refused; old configuration stays live", Errors: []ReloadError{{At: "a.routes:2:5", Message: "unknown upstream"}}}, nil
	}
	r = call(t, "POST", base+"/api/reload", testToken)
	res = ReloadResult{}
	r.decode(t, &res)
	if r.status != 422 || res.OK || r.jsonError(t) == "" || len(res.Errors) != 1 || res.Errors[0].At != "a.routes:2:5" {
		t.Fatalf("refused reload: %d %s", r.status, r.body)
	}
	next = func(context.Context) (ReloadResult, error) { return ReloadResult{}, errors.New("edgeway is stopping") }
	r = call(t, "POST", base+"/api/reload", testToken)
	if r.status != 503 || !strings.Contains(r.jsonError(t), "stopping") {
		t.Fatalf("reload not run: %d %s", r.status, r.body)
	}
}

func TestHandleAddsEndpoints(t *testing.T) {
	t.Parallel()
	s, base := startServer(t, Options{})
	s.Handle("GET /api/upstreams/{pool}", func(r *http.Request) (any, error) {
		return map[string]string{"pool": r.PathValue("pool")}, nil
	})
	if r := call(t, "GET", base+"/api/upstreams/api", testToken); r.status != 200 || !strings.Contains(r.body, `"pool": "api"`) {
		t.Fatalf("added endpoint: %d %s", r.status, r.body)
	}
	if r := call(t, "GET", base+"/api/upstreams/api", ""); r.status != 401 {
		t.Fatalf("added endpoint without token: %d", r.status)
	}
	for _, bad := range []string{"/api/x", "GET /debug", "GET /apix"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handle(%q) did not panic", bad)
				}
			}()
			s.Handle(bad, func(*http.Request) (any, error) { return nil, nil })
		}()
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	m := NewMetrics("v1.2.3")
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "edgeway_test_extra_total", Help: "test"})
	if err := m.Register(extra); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(extra); err == nil {
		t.Fatal("registering twice succeeded")
	}
	_, base := startServer(t, Options{Metrics: m})
	m.ObserveReload(ReloadResult{OK: true, Duration: 0.01})
	m.ObserveReload(ReloadResult{OK: false, Duration: 0.002})
	m.ObserveReload(ReloadResult{OK: false, Duration: 0.002})
	m.SetConfig("aaaa", time.Unix(1700000000, 0))
	m.SetConfig("bbbb", time.Unix(1700000100, 0))
	r := call(t, "GET", base+"/metrics", testToken)
	for _, want := range []string{
		`edgeway_reloads_total{result="ok"} 1`,
		`edgeway_reloads_total{result="error"} 2`,
		`edgeway_reload_duration_seconds_count 3`,
		`edgeway_last_reload_success_timestamp_seconds 1.7000001e+09`,
		`edgeway_config_info{hash="bbbb"} 1`,
		`edgeway_build_info{goversion="go`,
		`version="v1.2.3"} 1`,
		`edgeway_test_extra_total 0`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(r.body, `hash="aaaa"`) {
		t.Error("the old config hash is still exported")
	}
}

func TestConfigHash(t *testing.T) {
	t.Parallel()
	a := ConfigHash([]File{{Path: "/a", SHA256: "11"}, {Path: "/b", SHA256: "22"}})
	b := ConfigHash([]File{{Path: "/a", SHA256: "11"}, {Path: "/b", SHA256: "23"}})
	if len(a) != 16 || a == b || a != ConfigHash([]File{{Path: "/a", SHA256: "11"}, {Path: "/b", SHA256: "22"}}) {
		t.Fatalf("hashes %q %q", a, b)
	}
}
