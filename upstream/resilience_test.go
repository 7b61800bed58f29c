package upstream

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/upstream/health"
)

func healthFail(reason string) health.Result { return health.Result{Reason: reason} }

// TestKilledServerEjectedThenRampsBack kills one of three servers under a
// steady load: outlier detection ejects it, active checks hold it out
// while it is down, and once restarted it passes them and slow start
// ramps it to full weight.
func TestKilledServerEjectedThenRampsBack(t *testing.T) {
	t.Parallel()
	a, b, c := newBackend(t), newBackend(t), newBackend(t)
	cfg := poolConf(a.addr, b.addr, c.addr)
	cfg.Outlier = &conf.Outlier{Consecutive5xx: 5, ConsecutiveConnectFailures: 3,
		BaseEjection: 300 * time.Millisecond, MaxEjection: 5 * time.Second, MaxEjectionPercent: 50}
	hc := conf.DefaultHealthCheck()
	// A killed server refuses connections at once; the timeout only has to
	// let the live servers' checks pass on a loaded machine, so it is long.
	hc.Interval, hc.Timeout, hc.Healthy, hc.Unhealthy, hc.InitialHealthy = 50*time.Millisecond, time.Second, 2, 3, true
	cfg.Health = &hc
	cfg.SlowStart = 500 * time.Millisecond
	p := testPool(t, cfg, nil)

	var failed atomic.Int64
	stop := make(chan struct{})
	wg := load(p, 4, stop, &failed)
	defer func() { close(stop); wg.Wait() }()
	testutil.WaitFor(t, "traffic on the victim", func() bool { return stateOf(p, b.addr).Requests > 50 })

	killed := time.Now()
	b.kill()
	testutil.WaitFor(t, "victim ejected or unhealthy", func() bool {
		st := stateOf(p, b.addr).State
		return st == Ejected || st == Unhealthy
	})
	t.Logf("kill -> out of rotation: %v (%s; %d requests failed)", time.Since(killed), stateOf(p, b.addr).Reason, failed.Load())

	b.restart()
	restarted := time.Now()
	testutil.WaitFor(t, "victim healthy", func() bool { return stateOf(p, b.addr).State == Healthy })
	back := time.Since(restarted)
	testutil.WaitFor(t, "victim at full weight", func() bool { return stateOf(p, b.addr).EffectiveWeight == 1 })
	t.Logf("restart -> healthy: %v; restart -> full weight: %v (slow_start %v)", back, time.Since(restarted), cfg.SlowStart)
	if got := stateOf(p, b.addr).Transitions; len(got) < 2 {
		t.Errorf("transitions = %+v, want the way out and back", got)
	}
}

func TestHangingServerFailsHealthChecks(t *testing.T) {
	t.Parallel()
	a, b := newBackend(t), newBackend(t)
	b.mode.Store(modeHang)
	cfg := poolConf(a.addr, b.addr)
	hc := conf.DefaultHealthCheck()
	// The timeout applies to a's checks too: two of a's in a row timing out
	// on a loaded machine would leave no server healthy, and panic mode
	// would then pick b. 1s is a margin a loaded CI machine cannot miss.
	hc.Interval, hc.Timeout, hc.Unhealthy, hc.InitialHealthy = 30*time.Millisecond, time.Second, 2, true
	cfg.Health = &hc
	p := testPool(t, cfg, nil)
	start := time.Now()
	testutil.WaitFor(t, "hanging server unhealthy", func() bool { return stateOf(p, b.addr).State == Unhealthy })
	st := stateOf(p, b.addr)
	t.Logf("hang -> unhealthy in %v: %s", time.Since(start), st.Reason)
	if !strings.Contains(st.Reason, "timeout after "+hc.Timeout.String()) {
		t.Errorf("reason = %q, want the timeout", st.Reason)
	}
	for range 20 {
		if s, _, _ := roundTrip(p); s != nil && s.Addr == b.addr {
			t.Fatal("picked the unhealthy server")
		}
	}
}

func TestResettingServerEjected(t *testing.T) {
	t.Parallel()
	a, b := newBackend(t), newBackend(t)
	b.mode.Store(modeReset)
	cfg := poolConf(a.addr, b.addr)
	cfg.Outlier = &conf.Outlier{Consecutive5xx: 3, BaseEjection: time.Minute, MaxEjection: time.Minute, MaxEjectionPercent: 50}
	p := testPool(t, cfg, nil)
	for range 20 {
		roundTrip(p)
	}
	st := stateOf(p, b.addr)
	if st.State != Ejected || !strings.Contains(st.Reason, "3 consecutive 5xx or failed responses (last: no valid response)") {
		t.Fatalf("resetting server: %s (%s), want ejected", st.State, st.Reason)
	}
}

func Test503ServerEjectedAndBack(t *testing.T) {
	t.Parallel()
	a, b := newBackend(t), newBackend(t)
	b.mode.Store(mode503)
	clk := newClock()
	cfg := poolConf(a.addr, b.addr)
	cfg.Outlier = &conf.Outlier{Consecutive5xx: 5, BaseEjection: 30 * time.Second, MaxEjection: time.Minute, MaxEjectionPercent: 50}
	p := testPool(t, cfg, clk.Now)
	for range 10 {
		roundTrip(p)
	}
	st := stateOf(p, b.addr)
	if st.State != Ejected || !strings.Contains(st.Reason, "last: status 503") || !strings.Contains(st.Reason, "for 30s") {
		t.Fatalf("503 server: %s (%s), want ejected for 30s", st.State, st.Reason)
	}
	clk.Advance(29 * time.Second)
	if st := stateOf(p, b.addr).State; st != Ejected {
		t.Fatalf("after 29s: %s, want still ejected", st)
	}
	clk.Advance(time.Second)
	if st := stateOf(p, b.addr).State; st != Healthy {
		t.Fatalf("after 30s: %s, want healthy", st)
	}
	for range 10 { // still 503: the second ejection lasts twice as long
		roundTrip(p)
	}
	if st := stateOf(p, b.addr); st.State != Ejected || st.Ejections != 2 || !strings.Contains(st.Reason, "for 1m0s") {
		t.Fatalf("second ejection: %+v", st)
	}
}

func TestAbandonedNeverEjects(t *testing.T) {
	t.Parallel()
	cfg := poolConf("a:1", "b:1")
	cfg.Outlier = &conf.Outlier{Consecutive5xx: 1, ConsecutiveConnectFailures: 1, BaseEjection: time.Minute, MaxEjection: time.Minute, MaxEjectionPercent: 100}
	cfg.Breaker = &conf.Breaker{ErrorRate: 1, MinRequests: 1, Window: time.Minute, CoolDown: time.Minute, Trials: 1}
	p := testPool(t, cfg, nil)
	for range 200 {
		s, err := p.Pick(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Done(Result{Outcome: Abandoned})
	}
	for _, s := range p.Status().Servers {
		if s.State != Healthy || s.Failures != 0 {
			t.Errorf("%s after abandoned requests: %s, %d failures", s.Addr, s.State, s.Failures)
		}
	}
}

func TestMaxEjectionPercent(t *testing.T) {
	t.Parallel()
	cfg := poolConf("a:1", "b:1", "c:1")
	cfg.Outlier = &conf.Outlier{Consecutive5xx: 2, BaseEjection: time.Minute, MaxEjection: time.Minute, MaxEjectionPercent: 50}
	cfg.PanicThreshold = 0
	p := testPool(t, cfg, nil)
	for _, s := range p.Servers() {
		for range 4 {
			p.inFlight.Add(1)
			s.State.InFlight.Add(1)
			s.Done(Result{Status: 500})
		}
	}
	ejected := 0
	for _, s := range p.Status().Servers {
		if s.State == Ejected {
			ejected++
		}
	}
	if ejected != 1 {
		t.Fatalf("%d of 3 servers ejected with max_ejection_percent 50, want 1", ejected)
	}
}

func TestPanicThreshold(t *testing.T) {
	t.Parallel()
	cfg := poolConf("a:1", "b:1", "c:1", "d:1")
	hc := conf.DefaultHealthCheck()
	hc.Interval, hc.Unhealthy, hc.InitialHealthy = time.Hour, 1, true
	cfg.Health = &hc
	cfg.PanicThreshold = 50
	// The test reports the checks itself: real ones would probe a:1..d:1
	// at once (a loop's first check does not wait for the interval) and
	// mark servers unhealthy behind its back.
	q := uncheckedPool(t, cfg, nil)
	fail := func(addr string) { q.reportCheck(q.Server(addr), healthFail("status 500")) }
	picked := func() map[string]int {
		m := map[string]int{}
		for range 40 {
			s, err := q.Pick(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			m[s.Addr]++
			s.Done(Result{Status: 200})
		}
		return m
	}
	fail("a:1") // 3 of 4 healthy: 75% >= 50%, no panic
	if m := picked(); m["a:1"] != 0 || q.Status().Panic {
		t.Fatalf("75%% healthy: picks %v, panic %v", m, q.Status().Panic)
	}
	fail("b:1")
	fail("c:1") // 1 of 4: panic, everyone serves
	if m := picked(); len(m) != 4 || !q.Status().Panic {
		t.Fatalf("25%% healthy: picks %v, panic %v; want all four", m, q.Status().Panic)
	}
	off := true
	for _, a := range []string{"a:1", "b:1", "c:1", "d:1"} {
		if err := q.SetOverride(a, Override{Disabled: &off}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Pick(nil, nil); err == nil || !strings.Contains(err.Error(), "upstream u: no server available") {
		t.Fatalf("all disabled: err %v, want ErrNoServer", err)
	}
}
