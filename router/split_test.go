package router

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// TestSplitSchedule: one cycle of the schedule places each pool exactly
// its share, and any run of requests from the start is within one
// request of the shares (smooth, not rounded).
func TestSplitSchedule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		shares []int
		cycle  int
	}{
		{desc: "95/5", shares: []int{9500, 500}, cycle: 20},
		{desc: "90/10", shares: []int{9000, 1000}, cycle: 10},
		{desc: "thirds", shares: []int{3334, 3333, 3333}, cycle: 10000},
		{desc: "one pool rolled back", shares: []int{0, 10000}, cycle: 1},
		{desc: "0.01%", shares: []int{9999, 1}, cycle: 10000},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			s := schedule(tc.shares)
			if len(s) != tc.cycle {
				t.Fatalf("cycle of %d, want %d", len(s), tc.cycle)
			}
			got := make([]int, len(tc.shares))
			for n, p := range s {
				got[p]++
				for i, sh := range tc.shares {
					want := float64(n+1) * float64(sh) / 10000
					if d := float64(got[i]) - want; d > 1 || d < -1 {
						t.Fatalf("after %d requests pool %d has %d, want %.2f (±1)", n+1, i, got[i], want)
					}
				}
			}
			for i, sh := range tc.shares {
				if want := sh * tc.cycle / 10000; got[i] != want {
					t.Errorf("pool %d: %d of a cycle of %d, want %d", i, got[i], tc.cycle, want)
				}
			}
		})
	}
	if s := schedule([]int{0, 0}); len(s) != 0 {
		t.Errorf("no shares: schedule %v, want empty", s)
	}
}

// splitConfig is a listener, pools v1 and v2 and one route splitting
// between them.
func splitConfig(t testing.TB, v1, v2 string, s *conf.Split) *conf.Config {
	r := testRoute(t, "r", "PathPrefix(`/`)", "v1")
	r.Split = s
	return &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("v1", []string{v1}), testUpstream("v2", []string{v2})},
		Routes:    []conf.Route{r},
	}
}

func split9010() *conf.Split {
	return &conf.Split{Pools: []conf.SplitPool{{Upstream: "v1", Share: 9000}, {Upstream: "v2", Share: 1000}}}
}

// TestSplitChangesUnderTraffic: requests keep flowing, each answered by
// one of the split's pools, while the shares are set and cleared and the
// configuration is applied again (run with -race); afterwards the shares
// set last are the ones in effect, exactly.
func TestSplitChangesUnderTraffic(t *testing.T) {
	v1, v2 := backend(t, "v1"), backend(t, "v2")
	cfg := splitConfig(t, addr(v1), addr(v2), split9010())
	rt, s := front(t, cfg, Options{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(s.URL + "/")
				if err != nil {
					errs <- err.Error()
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if up := resp.Header.Get("X-Upstream"); resp.StatusCode != 200 || (up != "v1" && up != "v2") {
					errs <- fmt.Sprintf("%d from %q", resp.StatusCode, up)
					return
				}
			}
		}()
	}
	for i := range 50 {
		var err error
		switch i % 3 {
		case 0:
			err = rt.SetSplit("r", map[string]int{"v1": 5000, "v2": 5000})
		case 1:
			err = rt.SetSplit("r", nil)
		default:
			err = rt.Apply(splitConfig(t, addr(v1), addr(v2), split9010()))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.SetSplit("r", map[string]int{"v1": 2500, "v2": 7500}); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	select {
	case e := <-errs:
		t.Fatalf("a request failed while the split changed: %s", e)
	default:
	}
	got := map[string]int{}
	for range 20 {
		resp, _ := do(t, nil, newReq(t, "GET", s.URL+"/"))
		got[resp.Header.Get("X-Upstream")]++
	}
	if got["v1"] != 5 || got["v2"] != 15 {
		t.Errorf("after setting 25/75: %v, want exactly 5 and 15", got)
	}
	st, ok := rt.Split("r")
	if !ok || !st.Override || st.Pools[1].Share != 7500 {
		t.Errorf("Split status %+v, want the 25/75 override", st)
	}
}

// BenchmarkSplitPick is what placing a request costs: a plain split
// (an atomic load and an add), a sticky cookie the request carries, and
// a sticky header hashed.
func BenchmarkSplitPick(b *testing.B) {
	for _, bc := range []struct {
		desc   string
		sticky *conf.SplitSticky
		hdr    httpmsg.Header
	}{
		{desc: "schedule"},
		{desc: "sticky cookie", sticky: &conf.SplitSticky{Cookie: "pool"}, hdr: httpmsg.Header{{Name: "Cookie", Value: "a=b; pool=v2"}}},
		{desc: "sticky header", sticky: &conf.SplitSticky{Header: "X-User"}, hdr: httpmsg.Header{{Name: "X-User", Value: "user-12345"}}},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			sp := split9010()
			sp.Sticky = bc.sticky
			rt := New(Options{})
			defer rt.Close()
			if err := rt.Apply(splitConfig(b, "127.0.0.1:1", "127.0.0.1:2", sp)); err != nil {
				b.Fatal(err)
			}
			base := rt.Snapshot().http["web"].routes[0]
			x := &exchange{}
			x.in = &httpmsg.Request{Header: bc.hdr}
			b.ReportAllocs()
			for b.Loop() {
				x.rt = base
				x.pickSplit()
			}
		})
	}
}

// TestSplitRollbackMargin: the rollback compares a pool's failure rate
// with the other pools' together: 6% against 3% stays under a 5% margin,
// 10% against 3% trips; it needs min_requests in the window, ignores
// what fell out of the window, and never takes the last pool with a
// share.
func TestSplitRollbackMargin(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	rb := &conf.Rollback{ErrorRate: 0.05, Window: 30 * time.Second, MinRequests: 100}
	for _, tc := range []struct {
		desc                     string
		canaryFails, canaryTotal int
		stableFails, stableTotal int
		canaryAt                 time.Duration // before now
		wantRolled               bool
	}{
		{desc: "6% against 3%", canaryFails: 6, canaryTotal: 100, stableFails: 27, stableTotal: 900, wantRolled: false},
		{desc: "10% against 3%", canaryFails: 10, canaryTotal: 100, stableFails: 27, stableTotal: 900, wantRolled: true},
		{desc: "too few requests", canaryFails: 50, canaryTotal: 99, stableTotal: 900, wantRolled: false},
		{desc: "failures out of the window", canaryFails: 100, canaryTotal: 100, stableTotal: 900, canaryAt: time.Minute, wantRolled: false},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			c := &splitControl{route: "r", log: slog.New(slog.DiscardHandler), reg: &splitRegistry{}}
			c.configure(&conf.Split{Pools: []conf.SplitPool{{Upstream: "stable", Share: 9000}, {Upstream: "canary", Share: 1000}}, Rollback: rb})
			st := c.live.Load()
			fill := func(w *failWindow, at time.Time, fails, total int) {
				for i := range total {
					w.add(at, rb.Window, i < fails)
				}
			}
			fill(&st.counters[0].window, now, tc.stableFails, tc.stableTotal)
			fill(&st.counters[1].window, now.Add(-tc.canaryAt), tc.canaryFails, tc.canaryTotal)
			c.checkRollback(st, 1, now)
			got := c.live.Load().shares
			if rolled := got[1] == 0; rolled != tc.wantRolled || got[0] != 9000 {
				t.Errorf("shares after the check %v, want canary rolled back: %v", got, tc.wantRolled)
			}
		})
	}
	t.Run("last pool with a share", func(t *testing.T) {
		t.Parallel()
		c := &splitControl{route: "r", log: slog.New(slog.DiscardHandler), reg: &splitRegistry{}}
		c.configure(&conf.Split{Pools: []conf.SplitPool{{Upstream: "a", Share: 10000}, {Upstream: "b", Share: 0}}, Rollback: rb})
		st := c.live.Load()
		for range 200 {
			st.counters[0].window.add(now, rb.Window, true)
		}
		c.checkRollback(st, 0, now)
		if got := c.live.Load().shares; got[0] != 10000 {
			t.Errorf("shares %v: the only pool with a share was rolled back", got)
		}
	})
}
