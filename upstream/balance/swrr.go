// Package balance holds the balancing algorithms of upstream pools, one per
// file. They see servers only as indexes and weights, so health, outlier
// ejection and breakers can exclude a server without the algorithm knowing
// why; they are not safe for concurrent use and the pool serialises them.
package balance

// SWRR is nginx's smooth weighted round robin
// (ngx_http_upstream_get_peer): on each pick every eligible server's current
// value grows by its weight, the largest current wins and loses the total
// weight of the eligible servers. Weights {5,1,1} give a a b a c a a: the
// heavy server's turns are spread out instead of bunched. A server with
// weight 0 is never picked.
type SWRR struct {
	weight  []int
	current []int
}

// NewSWRR returns a balancer over len(weights) servers. Negative weights are
// treated as 0.
func NewSWRR(weights []int) *SWRR {
	s := &SWRR{weight: make([]int, len(weights)), current: make([]int, len(weights))}
	for i, w := range weights {
		s.weight[i] = max(w, 0)
	}
	return s
}

// Len is the number of servers.
func (s *SWRR) Len() int { return len(s.weight) }

// SetWeight changes the weight of server i (for runtime weights). Its
// current value is kept, so the sequence stays smooth.
func (s *SWRR) SetWeight(i, w int) { s.weight[i] = max(w, 0) }

// Next returns the index of the next server, or -1 when no server has a
// positive weight among those eligible accepts. A nil eligible accepts all.
func (s *SWRR) Next(eligible func(i int) bool) int {
	best, total := -1, 0
	for i, w := range s.weight {
		if w == 0 || (eligible != nil && !eligible(i)) {
			continue
		}
		s.current[i] += w
		total += w
		if best < 0 || s.current[i] > s.current[best] {
			best = i
		}
	}
	if best >= 0 {
		s.current[best] -= total
	}
	return best
}
