package balance

// LeastRequest is the power of two choices (Mitzenmacher; Envoy's
// LEAST_REQUEST, Traefik's p2c): draw two servers by weight, keep the one
// with fewer requests in flight per unit of weight. It follows load
// without the herd effect of always taking the least loaded, in O(1).
type LeastRequest struct{ rnd Rand }

// NewLeastRequest returns a power-of-two-choices policy drawing from rnd.
func NewLeastRequest(rnd Rand) *LeastRequest { return &LeastRequest{rnd: rnd} }

// Next returns the less loaded of two weighted draws, or -1.
func (l *LeastRequest) Next(s Servers, _ uint64) int {
	a := weighted(s, l.rnd)
	if a < 0 {
		return -1
	}
	b := weighted(s, l.rnd)
	if b < 0 || b == a {
		return a
	}
	// (load+1)/weight compared without division.
	la, lb := uint64(s.Load(a)+1), uint64(s.Load(b)+1)
	if lb*uint64(s.Weight(a)) < la*uint64(s.Weight(b)) {
		return b
	}
	return a
}
