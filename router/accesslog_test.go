package router

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestAccessSampling: with every successful line left out, errors and
// slow requests are still logged, each once.
func TestAccessSampling(t *testing.T) {
	t.Parallel()
	access := &logSink{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/slow":
			time.Sleep(20 * time.Millisecond) // makes it slower than slower_than, whatever the machine's load
		case "/fail":
			w.WriteHeader(503)
		}
	}))
	t.Cleanup(up.Close)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")},
	}
	_, fe := front(t, cfg, Options{AccessLog: slog.New(access), AccessLeaveOut: 1, AccessSlowerThan: 10 * time.Millisecond})
	// One connection, one request at a time: each line is written before
	// the next request is read.
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	for _, p := range []string{"/ok", "/ok", "/fail", "/ok", "/slow", "/ok"} {
		do(t, c, newReq(t, "GET", fe.URL+p))
	}
	testutil.WaitFor(t, "two lines", func() bool { return access.count("request") >= 2 })
	// Every line written is an error's or a slow request's (on a loaded
	// machine an /ok may be slow too, and is then rightly kept), and both
	// of those are there.
	access.mu.Lock()
	seen := map[string]bool{}
	for _, r := range access.recs {
		var path, status string
		var d float64
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "path":
				path = a.Value.String()
			case "status":
				status = a.Value.String()
			case "duration":
				d = a.Value.Float64()
			}
			return true
		})
		seen[path] = true
		if status < "400" && d < 0.010 {
			t.Errorf("a fast successful request was logged: %s %s in %vs", path, status, d)
		}
	}
	access.mu.Unlock()
	if !seen["/fail"] || !seen["/slow"] {
		t.Errorf("logged %v, want /fail and /slow among them", seen)
	}
}

// TestLineSampler: the share kept is the share asked for.
func TestLineSampler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		leaveOut float64
		lo, hi   int // of 10000 successful fast requests
	}{
		{0, 10000, 10000},
		{1, 0, 0},
		{0.9, 800, 1200},
		{0.5, 4600, 5400},
	} {
		s := newLineSampler(tc.leaveOut, time.Second)
		n := 0
		for range 10000 {
			if s.keep(200, time.Millisecond) {
				n++
			}
		}
		if n < tc.lo || n > tc.hi {
			t.Errorf("leave out %v: kept %d of 10000, want %d to %d", tc.leaveOut, n, tc.lo, tc.hi)
		}
		if !s.keep(404, 0) || !s.keep(499, 0) || !s.keep(200, time.Second) {
			t.Errorf("leave out %v: an error or a slow request was left out", tc.leaveOut)
		}
	}
}

// TestAccessLogUpstreamConnect: upstream_connect is the time a new
// upstream connection took, and 0 exactly when a pooled one was reused
// (as the upstream's count of accepted connections tells).
func TestAccessLogUpstreamConnect(t *testing.T) {
	t.Parallel()
	access := &logSink{}
	var conns atomic.Int32
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	t.Cleanup(up.Close)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")},
	}
	_, fe := front(t, cfg, Options{AccessLog: slog.New(access)})
	reused := 0
	for i := range 5 {
		before := conns.Load()
		access.reset()
		do(t, nil, newReq(t, "GET", fe.URL+"/"))
		testutil.WaitFor(t, "access log line", func() bool { _, _, ok := access.find("request"); return ok })
		got, _, _ := access.find("request")
		dialed := conns.Load() > before
		if connect := got["upstream_connect"]; dialed == (connect == "0") {
			t.Errorf("request %d: upstream_connect %q with a new upstream connection: %v", i, connect, dialed)
		}
		if !dialed {
			reused++
		}
	}
	if reused == 0 {
		t.Error("no request reused the pooled upstream connection")
	}
}
