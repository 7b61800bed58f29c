package balance

import "math/rand/v2"

// fixed is a Servers with set weights and loads; skip marks servers that
// cannot be chosen.
type fixed struct {
	w    []int
	load []int64
	skip map[int]bool
}

func (f *fixed) Len() int { return len(f.w) }

func (f *fixed) Weight(i int) int {
	if f.skip[i] {
		return 0
	}
	return f.w[i]
}

func (f *fixed) MaxWeight() int {
	m := 0
	for _, w := range f.w {
		m = max(m, w)
	}
	return m
}

func (f *fixed) Load(i int) int64 {
	if f.load == nil {
		return 0
	}
	return f.load[i]
}

func seeded(seed uint64) Rand { return rand.New(rand.NewPCG(seed, seed^0x5eed)).Uint64 }
