package balance

// SWRR is nginx's smooth weighted round robin
// (ngx_http_upstream_get_peer): on each pick every eligible server's current
// value grows by its weight, the largest current wins and loses the total
// weight of the eligible servers. Weights {5,1,1} give a a b a c a a: the
// heavy server's turns are spread out instead of bunched. A server with
// weight 0 is never picked. The weights are read at each pick, so runtime
// weights, slow start and health take effect at once. A pick costs O(n).
type SWRR struct {
	current []int
}

// NewSWRR returns a round robin over n servers.
func NewSWRR(n int) *SWRR { return &SWRR{current: make([]int, n)} }

// Next returns the index of the next server, or -1.
func (r *SWRR) Next(s Servers, _ uint64) int {
	best, total := -1, 0
	for i := range r.current {
		w := s.Weight(i)
		if w <= 0 {
			continue
		}
		r.current[i] += w
		total += w
		if best < 0 || r.current[i] > r.current[best] {
			best = i
		}
	}
	if best >= 0 {
		r.current[best] -= total
	}
	return best
}
