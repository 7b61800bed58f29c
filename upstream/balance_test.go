package upstream

import (
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

func withCookie(name, value string) *httpmsg.Request {
	return &httpmsg.Request{Target: "/", Header: httpmsg.Header{{Name: "Cookie", Value: "a=1; " + name + "=" + value}}}
}

func TestStickyPinsAndFallsBackWhenDrained(t *testing.T) {
	t.Parallel()
	cfg := poolConf("a:1", "b:1", "c:1")
	cfg.Balance = conf.Balance{Policy: conf.Sticky, Name: "srv"}
	p := testPool(t, cfg, nil)
	b := p.Server("b:1")
	if strings.Contains(b.ID, "b:1") || len(b.ID) != 16 {
		t.Fatalf("id %q is not opaque", b.ID)
	}
	first, _ := p.Pick(&httpmsg.Request{Target: "/"}, nil)
	first.Done(Result{Status: 200})
	if c := p.StickyCookie(&httpmsg.Request{Target: "/"}, first); c != "srv="+first.ID+"; Path=/; HttpOnly; SameSite=Lax" {
		t.Fatalf("cookie for an unpinned request = %q", c)
	}
	pinned := withCookie("srv", b.ID)
	for range 10 {
		s, _ := p.Pick(pinned, nil)
		if s != b {
			t.Fatalf("pinned to b, picked %s", s.Addr)
		}
		s.Done(Result{Status: 200})
	}
	if c := p.StickyCookie(pinned, b); c != "" {
		t.Fatalf("cookie for a right pin = %q, want none", c)
	}
	yes := true
	if err := p.SetOverride("b:1", Override{Drain: &yes}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		s, _ := p.Pick(pinned, nil)
		if s == b {
			t.Fatal("drained pinned server still picked")
		}
		if c := p.StickyCookie(pinned, s); !strings.HasPrefix(c, "srv="+s.ID) {
			t.Fatalf("re-pin cookie = %q", c)
		}
		s.Done(Result{Status: 200})
	}
	if s, _ := p.Pick(withCookie("srv", "bogus"), []*Server{p.Server("a:1")}); s == nil || s.Addr != "c:1" {
		t.Fatalf("bad pin with a tried: picked %v, want c:1", s)
	}
}

func TestLeastRequestPrefersLessLoaded(t *testing.T) {
	t.Parallel()
	cfg := poolConf("a:1", "b:1")
	cfg.Balance.Policy = conf.LeastRequest
	p := testPool(t, cfg, nil)
	var held []*Server
	for len(held) < 10 { // load a with 10 requests in flight
		s, _ := p.Pick(nil, nil)
		if s.Addr == "a:1" {
			held = append(held, s)
		} else {
			s.Done(Result{Status: 200})
		}
	}
	counts := map[string]int{}
	for range 1000 {
		s, _ := p.Pick(nil, nil)
		counts[s.Addr]++
		s.Done(Result{Status: 200})
	}
	if counts["b:1"] < 700 {
		t.Fatalf("picks with a loaded: %v, want most on b", counts)
	}
	for _, s := range held {
		s.Done(Result{Status: 200})
	}
}

// TestHashMovesOneNth adds a fourth server and removes one of four: about
// a quarter of the keys move, and a key's server does not change between
// picks.
func TestHashMovesOneNth(t *testing.T) {
	t.Parallel()
	mk := func(addrs ...string) *Pool {
		cfg := poolConf(addrs...)
		cfg.Balance = conf.Balance{Policy: conf.Hash, HashKey: conf.HashHeader, Name: "X-User"}
		return testPool(t, cfg, nil)
	}
	three, four := mk("a:1", "b:1", "c:1"), mk("a:1", "b:1", "c:1", "d:1")
	const keys = 20000
	moved := 0
	for k := range keys {
		req := &httpmsg.Request{Header: httpmsg.Header{{Name: "x-user", Value: "user" + strconv.Itoa(k)}}}
		s3, _ := three.Pick(req, nil)
		s4, _ := four.Pick(req, nil)
		again, _ := four.Pick(req, nil)
		if again != s4 {
			t.Fatal("hash pick not stable")
		}
		if s3.Addr != s4.Addr {
			moved++
		}
		for _, s := range []*Server{s3, s4, again} {
			s.Done(Result{Status: 200})
		}
	}
	share := float64(moved) / keys
	t.Logf("3 -> 4 servers: %.1f%% of keys moved (ideal 25%%)", 100*share)
	if math.Abs(share-0.25) > 0.04 {
		t.Fatalf("moved %.3f of the keys, want about 0.25", share)
	}
}

func TestHashClientIPAndFallback(t *testing.T) {
	t.Parallel()
	cfg := poolConf("a:1", "b:1", "c:1")
	cfg.Balance = conf.Balance{Policy: conf.Hash, HashKey: conf.HashClientIP}
	p := testPool(t, cfg, nil)
	req := &httpmsg.Request{RemoteAddr: netip.MustParseAddrPort("192.0.2.7:5555")}
	home, _ := p.Pick(req, nil)
	home.Done(Result{Status: 200})
	next, _ := p.Pick(req, []*Server{home})
	if next == nil || next == home {
		t.Fatalf("retry picked %v, want another server than %s", next, home.Addr)
	}
	next.Done(Result{Status: 200})
	again, _ := p.Pick(req, []*Server{home})
	if again != next {
		t.Fatalf("fallback not stable: %s then %s", next.Addr, again.Addr)
	}
	again.Done(Result{Status: 200})
}

func TestSlowStartRamp(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cfg := poolConf("a:1", "b:1")
	cfg.Servers[1].Weight = 10
	cfg.SlowStart = 10 * time.Second
	p := testPool(t, cfg, clk.Now)
	off := true
	p.SetOverride("b:1", Override{Disabled: &off})
	p.SetOverride("b:1", Override{ClearDisabled: true}) // comes back: ramps
	for _, step := range []struct {
		after time.Duration
		want  float64
	}{{0, 1}, {5 * time.Second, 5.5}, {5 * time.Second, 10}} {
		clk.Advance(step.after)
		if got := stateOf(p, "b:1").EffectiveWeight; math.Abs(got-step.want) > 0.01 {
			t.Errorf("effective weight after %v more = %v, want %v", step.after, got, step.want)
		}
	}
}

func TestBreakerOpensHalfOpensCloses(t *testing.T) {
	t.Parallel()
	clk := newClock()
	cfg := poolConf("a:1", "b:1")
	cfg.Breaker = &conf.Breaker{ErrorRate: 50, MinRequests: 10, Window: 10 * time.Second, CoolDown: 30 * time.Second, Trials: 2}
	cfg.PanicThreshold = 0
	p := testPool(t, cfg, clk.Now)
	b := p.Server("b:1")
	done := func(status int) {
		p.inFlight.Add(1)
		b.State.InFlight.Add(1)
		b.Done(Result{Status: status})
	}
	for i := range 10 {
		done([]int{200, 503}[i%2])
	}
	st := stateOf(p, "b:1")
	if st.State != Open || !strings.Contains(st.Reason, "5 of 10 requests failed") {
		t.Fatalf("after 50%% errors: %s (%s), want open", st.State, st.Reason)
	}
	clk.Advance(30 * time.Second)
	if st := stateOf(p, "b:1").State; st != HalfOpen {
		t.Fatalf("after the cool-down: %s, want half-open", st)
	}
	trials := 0
	for range 20 { // only Trials requests reach b while half-open
		s, _ := p.Pick(nil, nil)
		if s == b {
			trials++
		}
	}
	if trials != 2 {
		t.Fatalf("%d trial requests let through, want 2", trials)
	}
	done(200)
	done(200)
	if st := stateOf(p, "b:1"); st.State != Healthy || len(st.Transitions) != 3 {
		t.Fatalf("after 2 good trials: %+v, want healthy after 3 transitions", st)
	}
}

func TestSetSyncKeepsStateAndOverrides(t *testing.T) {
	t.Parallel()
	s := NewSet()
	defer s.Close()
	cfg := poolConf("a:1", "b:1")
	cfg.Outlier = &conf.Outlier{Consecutive5xx: 1, BaseEjection: time.Minute, MaxEjection: time.Minute, MaxEjectionPercent: 50}
	p1 := s.Sync([]conf.Upstream{cfg})["u"]
	w := 7
	if err := p1.SetOverride("a:1", Override{Weight: &w}); err != nil {
		t.Fatal(err)
	}
	b := p1.Server("b:1")
	p1.inFlight.Add(1)
	b.State.InFlight.Add(1)
	b.Done(Result{Status: 502})
	if st := stateOf(p1, "b:1").State; st != Ejected {
		t.Fatalf("b: %s, want ejected", st)
	}
	same := s.Sync([]conf.Upstream{cfg})["u"]
	if same != p1 {
		t.Fatal("unchanged pool rebuilt")
	}
	changed := cfg
	changed.Servers = append(append([]conf.Server(nil), cfg.Servers...), conf.Server{Addr: "c:1", Weight: 1})
	p2 := s.Sync([]conf.Upstream{changed})["u"]
	if p2 == p1 || !p1.closed.Load() {
		t.Fatal("changed pool not rebuilt, or old one not closed")
	}
	a := stateOf(p2, "a:1")
	if a.Override.Weight == nil || *a.Override.Weight != 7 || a.EffectiveWeight != 7 {
		t.Errorf("override lost: %+v", a.Override)
	}
	if st := stateOf(p2, "b:1"); st.State != Ejected || st.Ejections != 1 {
		t.Errorf("ejection lost: %+v", st)
	}
	if err := p2.SetOverride("a:1", Override{ClearWeight: true}); err != nil || stateOf(p2, "a:1").Override.Weight != nil {
		t.Errorf("clear weight: %v", err)
	}
	if err := p2.SetOverride("z:1", Override{}); err == nil {
		t.Error("override of an unknown server accepted")
	}
	big := MaxOverrideWeight + 1
	if err := p2.SetOverride("a:1", Override{Weight: &big}); err == nil {
		t.Errorf("weight %d accepted", big)
	}
	dropped := s.Sync([]conf.Upstream{poolConf("a:1")})["u"]
	if stateOf(dropped, "a:1").Requests != 0 && dropped.Server("b:1") != nil {
		t.Error("dropped server kept")
	}
}
