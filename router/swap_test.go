package router

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/routes/rule"
)

// TestApplyWhileServing swaps between two configurations (different pools,
// so pools are rebuilt and drained) while clients keep sending requests:
// none may fail.
func TestApplyWhileServing(t *testing.T) {
	t.Parallel()
	a, b := backend(t, "a"), backend(t, "b")
	cfgFor := func(id string, srv string, timeout time.Duration) *conf.Config {
		u := testUpstream("u-"+id, []string{srv})
		u.ResponseTimeout = timeout
		return &conf.Config{
			Listeners: []conf.Listener{testListener()},
			Upstreams: []conf.Upstream{u},
			Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u-"+id)},
		}
	}
	cfgs := []*conf.Config{cfgFor("a", addr(a), 5*time.Second), cfgFor("b", addr(b), 6*time.Second)}
	rt, fe := front(t, cfgs[0], Options{})
	var stop atomic.Bool
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				resp, err := http.Get(fe.URL + "/")
				if err != nil {
					failed.Add(1)
					t.Error(err)
					continue
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					t.Errorf("status %d during swap", resp.StatusCode)
				}
				ok.Add(1)
			}
		})
	}
	for i := range 200 {
		if err := rt.Apply(cfgs[i%2]); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			testutil.WaitFor(t, "requests between swaps", func() bool { return ok.Load() > int64(i) })
		}
	}
	stop.Store(true)
	wg.Wait()
	if failed.Load() != 0 || ok.Load() == 0 {
		t.Errorf("%d ok, %d failed", ok.Load(), failed.Load())
	}
}

func TestApplyRefusesBadConfig(t *testing.T) {
	t.Parallel()
	a := backend(t, "a")
	good := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(a)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")},
	}
	rt, fe := front(t, good, Options{})
	bad := *good
	bad.Routes = []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "missing")}
	if err := rt.Apply(&bad); err == nil {
		t.Fatal("Apply accepted a route to an unknown upstream")
	}
	if resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/")); resp.StatusCode != 200 {
		t.Errorf("old table not kept: status %d", resp.StatusCode)
	}
}

func TestBuildMatch(t *testing.T) {
	t.Parallel()
	tcpRule, err := rule.Parse(rule.TCP, "HostSNI(`db.example`)")
	if err != nil {
		t.Fatal(err)
	}
	admin := testRoute(t, "admin", "Host(`admin.example`)", "b")
	admin.Listeners = []string{"internal"}
	cfg := &conf.Config{
		Listeners: []conf.Listener{{Name: "web"}, {Name: "internal"}},
		Upstreams: []conf.Upstream{{Name: "a"}, {Name: "b"}},
		Routes:    []conf.Route{testRoute(t, "site", "Host(`www.example`)", "a"), admin},
		TCPRoutes: []conf.TCPRoute{{Name: "db", Rule: tcpRule, Priority: tcpRule.DefaultPriority(), Upstream: "pg"}},
	}
	s, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		desc, listener, host string
		route, upstream      string
		ok                   bool
	}{
		{desc: "route on every listener", listener: "web", host: "www.example", route: "site", upstream: "a", ok: true},
		{desc: "restricted route on its listener", listener: "internal", host: "admin.example", route: "admin", upstream: "b", ok: true},
		{desc: "restricted route elsewhere", listener: "web", host: "admin.example"},
		{desc: "unknown listener", listener: "nope", host: "www.example"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			r, u, ok := s.MatchHTTP(tc.listener, &rule.HTTPRequest{Method: "GET", Host: tc.host, Path: "/", Header: http.Header{}})
			if r != tc.route || u != tc.upstream || ok != tc.ok {
				t.Errorf("MatchHTTP = %q %q %v, want %q %q %v", r, u, ok, tc.route, tc.upstream, tc.ok)
			}
		})
	}
	if r, u, ok := s.MatchTCP("web", &rule.TCPHello{SNI: "db.example"}); r != "db" || u != "pg" || !ok {
		t.Errorf("MatchTCP = %q %q %v, want db pg true", r, u, ok)
	}
}
