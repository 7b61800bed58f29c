package upstream

import (
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/upstream/balance"
)

// Set keeps the pools of the live configuration by name. Sync is called
// with each new configuration: a pool whose settings did not change is
// kept as it is (balancer position, idle connections, health checks), a
// changed one is rebuilt with the same ServerState for every address it
// still lists (health, ejections, breaker, overrides), and a pool that is
// gone or rebuilt is drained with Pool.Close. Requests that started on the
// previous routing table keep using the old pool until they end; Close
// only releases its connections once they have.
type Set struct {
	mu     sync.Mutex
	pools  map[string]*Pool
	groups map[string]*setGroup
	log    *slog.Logger
	now    func() time.Time
	rnd    balance.Rand
}

// setGroup is what a Set keeps of one pool name: the group and the state
// of each address.
type setGroup struct {
	g      *group
	states map[string]*ServerState
}

// NewSet returns an empty set that logs to slog.Default.
func NewSet() *Set {
	return &Set{pools: map[string]*Pool{}, groups: map[string]*setGroup{},
		log: slog.Default(), now: time.Now, rnd: rand.Uint64}
}

// SetLogger sets where pools log their servers' state changes; call it
// before the first Sync.
func (s *Set) SetLogger(l *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = l
}

// Sync makes the set match cfgs and returns the pools by name. The returned
// map is the caller's; the pools in it are shared.
func (s *Set) Sync(cfgs []conf.Upstream) map[string]*Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*Pool, len(cfgs))
	groups := make(map[string]*setGroup, len(cfgs))
	var started []*Pool
	for _, c := range cfgs {
		sg := s.groups[c.Name]
		live := sg != nil
		if !live {
			sg = &setGroup{g: new(group), states: map[string]*ServerState{}}
		}
		p := s.pools[c.Name]
		if p == nil || !sameSettings(p.cfg, c) {
			p = newPool(c, sg.g, s.log, s.now, s.rnd, func(addr string) *ServerState {
				if st := sg.states[addr]; st != nil {
					return st
				}
				// A server of a pool already live ramps up (slow start).
				return newServerState(sg.g, s.now(), !live)
			})
			started = append(started, p)
		}
		next[c.Name] = p
		groups[c.Name] = keep(sg, p)
	}
	for name, old := range s.pools {
		if next[name] != old {
			old.Close()
		}
	}
	for _, p := range started {
		p.startChecks()
	}
	s.pools, s.groups = next, groups
	out := make(map[string]*Pool, len(next))
	for k, v := range next {
		out[k] = v
	}
	return out
}

// keep returns sg with only the states p lists.
func keep(sg *setGroup, p *Pool) *setGroup {
	states := make(map[string]*ServerState, len(p.servers))
	for _, sv := range p.servers {
		states[sv.Addr] = sv.State
	}
	return &setGroup{g: sg.g, states: states}
}

// Pool returns the live pool called name, or nil.
func (s *Set) Pool(name string) *Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pools[name]
}

// Pools returns the live pools by name; the map is the caller's.
func (s *Set) Pools() map[string]*Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*Pool, len(s.pools))
	for k, v := range s.pools {
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
	s.pools, s.groups = map[string]*Pool{}, map[string]*setGroup{}
}

// sameSettings reports whether two upstream blocks build the same pool
// (positions in files do not count).
func sameSettings(a, b conf.Upstream) bool {
	return reflect.DeepEqual(unplaced(a), unplaced(b))
}

func unplaced(u conf.Upstream) conf.Upstream {
	u.Pos = conf.Pos{}
	servers := make([]conf.Server, len(u.Servers))
	for i, s := range u.Servers {
		s.Pos = conf.Pos{}
		servers[i] = s
	}
	u.Servers = servers
	return u
}
