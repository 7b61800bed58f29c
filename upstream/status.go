package upstream

import (
	"time"

	"github.com/edgeway/edgeway/conf"
)

// PoolStatus is a snapshot of a pool for the admin API, ready for
// encoding/json.
type PoolStatus struct {
	Name string `json:"name"`
	// Balance is the policy: round_robin, least_request, random,
	// hash, sticky.
	Balance conf.Balance `json:"balance"`
	// Panic is true while fewer than PanicThreshold percent of the
	// servable servers are healthy, so all of them take traffic.
	Panic          bool           `json:"panic"`
	PanicThreshold int            `json:"panic_threshold"`
	SlowStart      time.Duration  `json:"slow_start_ns"`
	InFlight       int64          `json:"in_flight"`
	Servers        []ServerStatus `json:"servers"`
}

// ServerStatus is a snapshot of one server.
type ServerStatus struct {
	Addr string `json:"address"`
	ID   string `json:"id"`
	// Weight is the configured weight.
	Weight int `json:"weight"`
	// Override holds the admin overrides; each field nil when not set.
	Override OverrideStatus `json:"override"`
	// EffectiveWeight is the weight the balancer uses now: the runtime or
	// configured weight ramped by slow start; 0 when the server takes no
	// traffic.
	EffectiveWeight float64 `json:"effective_weight"`
	State           State   `json:"state"`
	// Since is when the server entered State; Reason says why (the last
	// failing check, the counts that ejected it or opened its breaker,
	// the admin change).
	Since       time.Time    `json:"since"`
	Reason      string       `json:"reason"`
	Transitions []Transition `json:"transitions"`
	// LastCheck is the last failing health check's result ("" if none).
	LastCheck string `json:"last_check,omitempty"`
	// Ejections counts the ejections that set the current ejection time.
	Ejections int    `json:"ejections"`
	InFlight  int64  `json:"in_flight"`
	Requests  uint64 `json:"requests"`
	Failures  uint64 `json:"failures"`
	// Entered counts the transitions into each state (indexed by State)
	// since the server's state was made, for the metrics.
	Entered [numStates]uint64 `json:"-"`
}

// OverrideStatus holds a server's admin overrides; nil when not set.
type OverrideStatus struct {
	Weight   *int  `json:"weight"`
	Drain    *bool `json:"drain"`
	Disabled *bool `json:"disabled"`
}

// Status returns a snapshot of the pool and each of its servers. It also
// ends the ejections and open breakers whose time has passed, so that an
// idle pool shows its servers back.
func (p *Pool) Status() PoolStatus {
	p.mu.Lock()
	p.pk = pick{}
	p.refresh()
	ps := PoolStatus{Name: p.cfg.Name, Balance: p.cfg.Balance, Panic: p.counts.panic,
		PanicThreshold: p.cfg.PanicThreshold, SlowStart: p.cfg.SlowStart, InFlight: p.inFlight.Load()}
	ps.Servers = make([]ServerStatus, len(p.servers))
	for i, s := range p.servers {
		ps.Servers[i] = p.serverStatus(i, s)
	}
	p.pk = pick{}
	p.mu.Unlock()
	return ps
}

// serverStatus snapshots one server; called with p.mu held.
func (p *Pool) serverStatus(i int, s *Server) ServerStatus {
	st := s.State
	ss := ServerStatus{Addr: s.Addr, ID: s.ID, Weight: s.Weight,
		EffectiveWeight: float64(p.Weight(i)) / weightUnit,
		InFlight:        st.InFlight.Load(), Requests: st.Requests.Load(), Failures: st.Failures.Load()}
	st.mu.Lock()
	defer st.mu.Unlock()
	m := &st.m
	ss.State, ss.Since, ss.Reason, ss.Transitions = m.state, m.since, m.reason, m.transitions()
	ss.LastCheck, ss.Ejections = m.lastCheck, m.ejections
	for i := range ss.Entered {
		ss.Entered[i] = st.entered[i].Load()
	}
	if m.weight >= 0 {
		w := m.weight
		ss.Override.Weight = &w
	}
	ss.Override.Drain = m.drain.ptr()
	ss.Override.Disabled = m.disabled.ptr()
	return ss
}

func (t tri) ptr() *bool {
	if t == unset {
		return nil
	}
	v := t == on
	return &v
}
