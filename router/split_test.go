package router

import (
	"testing"
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
