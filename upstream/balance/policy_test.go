package balance

import (
	"fmt"
	"math"
	"strconv"
	"testing"
)

func TestWeightedShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		p    Policy
		f    *fixed
		want []float64 // expected shares
	}{
		{desc: "random 1 2 0 5", p: NewRandom(seeded(1)), f: &fixed{w: []int{1, 2, 0, 5}}, want: []float64{1. / 8, 2. / 8, 0, 5. / 8}},
		{desc: "random skips", p: NewRandom(seeded(2)), f: &fixed{w: []int{1, 1, 1}, skip: map[int]bool{1: true}}, want: []float64{.5, 0, .5}},
		{desc: "least_request equal load follows weight", p: NewLeastRequest(seeded(3)), f: &fixed{w: []int{1, 3}, load: []int64{0, 0}},
			// two draws by weight, ties to the first: b wins unless both are a.
			want: []float64{1./16 + 2*(1./4*3./4)*0, 15. / 16}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			const picks = 40000
			counts := make([]int, tc.f.Len())
			for range picks {
				counts[tc.p.Next(tc.f, 0)]++
			}
			for i, want := range tc.want {
				got := float64(counts[i]) / picks
				if math.Abs(got-want) > 0.02 {
					t.Errorf("server %d share %.3f, want %.3f (counts %v)", i, got, want, counts)
				}
			}
		})
	}
}

func TestLeastRequestPrefersLessLoaded(t *testing.T) {
	t.Parallel()
	f := &fixed{w: []int{1, 1, 1}, load: []int64{10, 0, 10}}
	p := NewLeastRequest(seeded(4))
	counts := make([]int, 3)
	for range 9000 {
		counts[p.Next(f, 0)]++
	}
	// b wins every pair it is drawn in: 1 - (2/3)^2 = 5/9 of the picks.
	if got := float64(counts[1]) / 9000; math.Abs(got-5./9) > 0.03 {
		t.Errorf("idle server share %.3f, want %.3f (counts %v)", got, 5./9, counts)
	}
}

func TestNoServer(t *testing.T) {
	t.Parallel()
	f := &fixed{w: []int{0, 0}}
	for _, p := range []Policy{NewSWRR(2), NewRandom(seeded(5)), NewLeastRequest(seeded(6)), NewMaglev([]string{"a", "b"}, f.w)} {
		if i := p.Next(f, 42); i != -1 {
			t.Errorf("%T picked %d among weight-0 servers", p, i)
		}
	}
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.%d.%d:8080", i/256, i%256)
	}
	return out
}

func ones(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// TestMaglevMovesOneNth checks consistent hashing: adding or removing one
// of N servers moves about 1/N of the keys, and keys only move to (or
// from) the server that changed.
func TestMaglevMovesOneNth(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, 10, 50} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			before := NewMaglev(ids(n), ones(n))
			after := NewMaglev(ids(n+1), ones(n+1)) // one server added
			const keys = 100000
			moved, wrong := 0, 0
			for k := range keys {
				key := Key("user-" + strconv.Itoa(k))
				a, b := before.Lookup(key), after.Lookup(key)
				if a != b {
					moved++
					if b != n {
						wrong++
					}
				}
			}
			share, want := float64(moved)/keys, 1/float64(n+1)
			t.Logf("%d -> %d servers: %.2f%% of keys moved (ideal %.2f%%), %d to an old server", n, n+1, 100*share, 100*want, wrong)
			if math.Abs(share-want) > want*0.25 {
				t.Errorf("moved share %.4f, want about %.4f", share, want)
			}
			if float64(wrong) > 0.02*keys {
				t.Errorf("%d keys moved between unchanged servers", wrong)
			}
		})
	}
}

func TestMaglevWeights(t *testing.T) {
	t.Parallel()
	m := NewMaglev(ids(3), []int{1, 2, 1})
	counts := make([]int, 3)
	for _, i := range m.table {
		counts[i]++
	}
	total := float64(len(m.table))
	for i, want := range []float64{.25, .5, .25} {
		if got := float64(counts[i]) / total; math.Abs(got-want) > 0.01 {
			t.Errorf("server %d owns %.3f of the table, want %.3f", i, got, want)
		}
	}
}

// TestMaglevFallback checks that a key whose server cannot serve goes to
// another one, always the same, and that the others' keys stay put.
func TestMaglevFallback(t *testing.T) {
	t.Parallel()
	m := NewMaglev(ids(4), ones(4))
	f := &fixed{w: ones(4), skip: map[int]bool{2: true}}
	spread := make([]int, 4)
	for k := range 20000 {
		key := Key(strconv.Itoa(k))
		got := m.Next(f, key)
		if got == 2 {
			t.Fatal("picked the unavailable server")
		}
		if home := m.Lookup(key); home != 2 && got != home {
			t.Fatalf("key of server %d moved to %d", home, got)
		} else if home == 2 {
			spread[got]++
			if again := m.Next(f, key); again != got {
				t.Fatalf("fallback not stable: %d then %d", got, again)
			}
		}
	}
	for _, i := range []int{0, 1, 3} {
		if spread[i] == 0 {
			t.Errorf("no fallback keys went to server %d: %v", i, spread)
		}
	}
}
