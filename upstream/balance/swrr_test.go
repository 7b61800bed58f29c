package balance

import (
	"strings"
	"testing"
)

func TestSWRRSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		weights  []int
		eligible func(int) bool
		picks    int
		want     string
	}{
		{desc: "nginx 5 1 1", weights: []int{5, 1, 1}, picks: 14, want: "aabacaaaabacaa"},
		{desc: "equal weights alternate", weights: []int{1, 1}, picks: 4, want: "abab"},
		{desc: "weight 0 never picked", weights: []int{0, 2, 1}, picks: 6, want: "bcbbcb"},
		{desc: "all zero", weights: []int{0, 0}, picks: 2, want: "--"},
		{desc: "empty", weights: nil, picks: 1, want: "-"},
		{desc: "ineligible skipped", weights: []int{5, 1, 1}, eligible: func(i int) bool { return i != 0 }, picks: 4, want: "bcbc"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			s := NewSWRR(tc.weights)
			var b strings.Builder
			for range tc.picks {
				i := s.Next(tc.eligible)
				if i < 0 {
					b.WriteByte('-')
					continue
				}
				b.WriteByte(byte('a' + i))
			}
			if got := b.String(); got != tc.want {
				t.Errorf("sequence = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSWRRShares(t *testing.T) {
	t.Parallel()
	weights := []int{3, 0, 7, 1}
	s := NewSWRR(weights)
	counts := make([]int, len(weights))
	const rounds = 100
	for range rounds * 11 {
		counts[s.Next(nil)]++
	}
	for i, w := range weights {
		if counts[i] != w*rounds {
			t.Errorf("server %d picked %d times, want %d", i, counts[i], w*rounds)
		}
	}
}

func TestSWRRSetWeight(t *testing.T) {
	t.Parallel()
	s := NewSWRR([]int{1, 1})
	s.SetWeight(0, 0)
	for range 5 {
		if i := s.Next(nil); i != 1 {
			t.Fatalf("picked %d after weight 0, want 1", i)
		}
	}
}
