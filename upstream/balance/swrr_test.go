package balance

import (
	"strings"
	"testing"
)

func TestSWRRSequence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		weights []int
		skip    map[int]bool
		picks   int
		want    string
	}{
		{desc: "nginx 5 1 1", weights: []int{5, 1, 1}, picks: 14, want: "aabacaaaabacaa"},
		{desc: "equal weights alternate", weights: []int{1, 1}, picks: 4, want: "abab"},
		{desc: "weight 0 never picked", weights: []int{0, 2, 1}, picks: 6, want: "bcbbcb"},
		{desc: "all zero", weights: []int{0, 0}, picks: 2, want: "--"},
		{desc: "empty", weights: nil, picks: 1, want: "-"},
		{desc: "ineligible skipped", weights: []int{5, 1, 1}, skip: map[int]bool{0: true}, picks: 4, want: "bcbc"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			s := NewSWRR(len(tc.weights))
			f := &fixed{w: tc.weights, skip: tc.skip}
			var b strings.Builder
			for range tc.picks {
				i := s.Next(f, 0)
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
	f := &fixed{w: []int{3, 0, 7, 1}}
	s := NewSWRR(len(f.w))
	counts := make([]int, len(f.w))
	const rounds = 100
	for range rounds * 11 {
		counts[s.Next(f, 0)]++
	}
	for i, w := range f.w {
		if counts[i] != w*rounds {
			t.Errorf("server %d picked %d times, want %d", i, counts[i], w*rounds)
		}
	}
}
