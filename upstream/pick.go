package upstream

import (
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/upstream/balance"
)

// weightUnit scales configured weights so that slow start can ramp a
// weight of 1 smoothly.
const weightUnit = 1000

// pick is the context of the pick in progress, read by the policy
// through the pool's balance.Servers methods (under mu).
type pick struct {
	tried []*Server
	panic bool
	now   int64 // unix ns, 0 until needed
}

var _ balance.Servers = (*Pool)(nil)

// Pick chooses a server for req among those that can take traffic,
// skipping the ones in tried (earlier tries of the same request, from
// this pool or an older generation of it), and counts it in flight. When
// fewer than the panic threshold's share of servers are healthy it
// chooses among all servers not drained or disabled. It returns an error
// wrapping ErrNoServer when none can; the caller must call Done on the
// returned server. req may be nil for policies that do not read it.
func (p *Pool) Pick(req *httpmsg.Request, tried []*Server) (*Server, error) {
	p.mu.Lock() // lock order: see ServerState.mu; only the states' atomics are read here
	p.pk = pick{tried: tried}
	p.refresh()
	i := -1
	if p.counts.servable > 0 {
		i = p.choose(req)
	}
	var s *Server
	if i >= 0 {
		s = p.servers[i]
		if State(s.State.state.Load()) == HalfOpen {
			s.State.trials.Add(1)
		}
	}
	p.pk = pick{}
	p.mu.Unlock()
	if s == nil {
		return nil, p.noServer
	}
	p.inFlight.Add(1)
	s.State.InFlight.Add(1)
	return s, nil
}

func (p *Pool) choose(req *httpmsg.Request) int {
	switch p.cfg.Balance.Policy {
	case conf.Hash:
		if key, ok := p.hashKey(req); ok {
			return p.policy.Next(p, key)
		}
		return p.rrOrRandom()
	case conf.Sticky:
		if i, ok := p.pinned(req); ok && p.Weight(i) > 0 {
			return i
		}
		return p.rr.Next(p, 0)
	}
	return p.policy.Next(p, 0)
}

// rrOrRandom balances a hash request that has no key: at random, by
// weight.
func (p *Pool) rrOrRandom() int { return p.random.Next(p, 0) }

// refresh runs the lazy expiry of ejections and open breakers, and
// recounts the servers after a state change. Called with mu held.
func (p *Pool) refresh() {
	if e := p.group.expiry.Load(); e != 0 && p.nowNano() >= e {
		p.expireAll(time.Unix(0, p.nowNano()))
	}
	if ep := p.group.epoch.Load(); ep != p.epoch {
		p.recount()
		p.epoch = ep
	}
	p.pk.panic = p.counts.panic
}

func (p *Pool) recount() {
	var c counts
	for _, s := range p.servers {
		w, st := p.baseWeight(s), State(s.State.state.Load())
		if w == 0 || st == Draining || st == Disabled {
			continue
		}
		c.servable++
		c.maxWeight = max(c.maxWeight, w)
		if st.serving() {
			c.healthy++
		}
	}
	c.panic = p.cfg.PanicThreshold > 0 && c.healthy*100 < p.cfg.PanicThreshold*c.servable
	p.counts = c
}

func (p *Pool) nowNano() int64 {
	if p.pk.now == 0 {
		p.pk.now = p.now().UnixNano()
	}
	return p.pk.now
}

// baseWeight is the runtime weight when set, else the configured one, in
// weight units.
func (p *Pool) baseWeight(s *Server) int {
	if o := s.State.override.Load(); o >= 0 {
		return int(o) * weightUnit
	}
	return s.Weight * weightUnit
}

// Len is the number of servers (balance.Servers).
func (p *Pool) Len() int { return len(p.servers) }

// MaxWeight bounds Weight (balance.Servers).
func (p *Pool) MaxWeight() int { return p.counts.maxWeight }

// Load is server i's requests in flight (balance.Servers).
func (p *Pool) Load(i int) int64 { return p.servers[i].State.InFlight.Load() }

// Weight is server i's effective weight at the pick in progress
// (balance.Servers): 0 when it cannot take this request, else its runtime
// or configured weight, ramped by slow start. Only the balancer calls it,
// with mu held.
func (p *Pool) Weight(i int) int {
	s := p.servers[i]
	st := s.State
	switch state := State(st.state.Load()); {
	case state == Healthy:
	case p.pk.panic:
		if state == Draining || state == Disabled {
			return 0
		}
	case state != HalfOpen || p.cfg.Breaker == nil || int(st.trials.Load()) >= p.cfg.Breaker.Trials:
		return 0
	}
	for _, t := range p.pk.tried {
		if t != nil && t.State == st {
			return 0
		}
	}
	w := p.baseWeight(s)
	if p.cfg.SlowStart > 0 && w > 0 {
		if rs := st.rampStart.Load(); rs != 0 {
			w = p.ramp(st, w, rs)
		}
	}
	return w
}

// ramp scales w by slow start: linearly from 10% to 100% over SlowStart
// from rs (unix ns); at the end the ramp is cleared.
func (p *Pool) ramp(st *ServerState, w int, rs int64) int {
	elapsed := time.Duration(p.nowNano() - rs)
	if elapsed >= p.cfg.SlowStart {
		st.rampStart.CompareAndSwap(rs, 0)
		return w
	}
	frac := 0.1 + 0.9*float64(elapsed)/float64(p.cfg.SlowStart)
	return max(1, int(float64(w)*frac))
}
