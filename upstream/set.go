package upstream

import (
	"slices"
	"sync"

	"github.com/edgeway/edgeway/conf"
)

// Set keeps the pools of the live configuration by name. Sync is called
// with each new configuration: a pool whose settings did not change is
// kept as it is (balancer position, idle connections), a changed one is
// rebuilt with the same ServerState for every address it still lists, and
// a pool that is gone or rebuilt is drained with Pool.Close. Requests that
// started on the previous routing table keep using the old pool until they
// end; Close only releases its connections once they have.
type Set struct {
	mu     sync.Mutex
	pools  map[string]*Pool
	states map[stateKey]*ServerState
}

type stateKey struct{ pool, addr string }

// NewSet returns an empty set.
func NewSet() *Set {
	return &Set{pools: map[string]*Pool{}, states: map[stateKey]*ServerState{}}
}

// Sync makes the set match cfgs and returns the pools by name. The returned
// map is the caller's; the pools in it are shared.
func (s *Set) Sync(cfgs []conf.Upstream) map[string]*Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*Pool, len(cfgs))
	live := make(map[stateKey]*ServerState)
	for _, c := range cfgs {
		p := s.pools[c.Name]
		if p == nil || !sameSettings(p.cfg, c) {
			p = newPool(c, func(addr string) *ServerState { return s.state(c.Name, addr) })
		}
		next[c.Name] = p
		for _, sv := range p.servers {
			live[stateKey{c.Name, sv.Addr}] = sv.State
		}
	}
	for name, old := range s.pools {
		if next[name] != old {
			old.Close()
		}
	}
	s.pools, s.states = next, live
	out := make(map[string]*Pool, len(next))
	for k, v := range next {
		out[k] = v
	}
	return out
}

// Close drains every pool and empties the set.
func (s *Set) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pools {
		p.Close()
	}
	s.pools, s.states = map[string]*Pool{}, map[stateKey]*ServerState{}
}

// state returns the kept state of a server, or a fresh one.
func (s *Set) state(pool, addr string) *ServerState {
	if st := s.states[stateKey{pool, addr}]; st != nil {
		return st
	}
	return new(ServerState)
}

// sameSettings reports whether two upstream blocks build the same pool
// (positions in files do not count).
func sameSettings(a, b conf.Upstream) bool {
	if a.Name != b.Name || a.ConnectTimeout != b.ConnectTimeout ||
		a.ResponseTimeout != b.ResponseTimeout || a.IdleTimeout != b.IdleTimeout ||
		a.MaxIdleConns != b.MaxIdleConns {
		return false
	}
	return slices.EqualFunc(a.Servers, b.Servers, func(x, y conf.Server) bool {
		return x.Addr == y.Addr && x.Weight == y.Weight
	})
}
