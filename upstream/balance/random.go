package balance

// Random picks a server at random in proportion to its weight.
type Random struct{ rnd Rand }

// NewRandom returns a weighted random policy drawing from rnd.
func NewRandom(rnd Rand) *Random { return &Random{rnd: rnd} }

// Next returns a random server, or -1.
func (r *Random) Next(s Servers, _ uint64) int { return weighted(s, r.rnd) }

// samples is how many uniform draws weighted tries before it scans.
const samples = 8

// weighted draws an index with probability proportional to its weight.
// It first samples by rejection (draw a server uniformly, keep it with
// probability weight/MaxWeight: O(1) when most servers can serve), then
// falls back to an exact scan over the cumulative weights.
func weighted(s Servers, rnd Rand) int {
	n, maxW := uint64(s.Len()), uint64(s.MaxWeight())
	if n == 0 || maxW == 0 {
		return -1
	}
	for range samples {
		v := rnd()
		i := int(v % n)
		if w := s.Weight(i); w > 0 && uint64(w) >= maxW || w > 0 && (v/n)%maxW < uint64(w) {
			return i
		}
	}
	total := 0
	for i := range int(n) {
		total += s.Weight(i)
	}
	if total <= 0 {
		return -1
	}
	x := int(rnd() % uint64(total))
	for i := range int(n) {
		if x -= s.Weight(i); x < 0 {
			return i
		}
	}
	return -1
}
