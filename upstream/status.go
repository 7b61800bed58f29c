package upstream

import (
	"time"

	"github.com/edgeway/edgeway/conf"
)

// PoolStatus is a snapshot of a pool for the admin API. Its JSON form is
// cmd/edgeway's (poolView: the API's names and units), so it carries no
// JSON tags.
type PoolStatus struct {
	Name string
	// Balance is the policy: round_robin, least_request, random,
	// hash, sticky.
	Balance conf.Balance
	// Panic is true while fewer than PanicThreshold percent of the
	// servable servers are healthy, so all of them take traffic.
	Panic          bool
	PanicThreshold int
	SlowStart      time.Duration
	InFlight       int64
	Servers        []ServerStatus
}

// ServerStatus is a snapshot of one server.
type ServerStatus struct {
	Addr string
	ID   string
	// Weight is the configured weight.
	Weight int
	// Override holds the admin overrides; each field nil when not set.
	Override OverrideStatus
	// EffectiveWeight is the weight the balancer uses now: the runtime or
	// configured weight ramped by slow start; 0 when the server takes no
	// traffic.
	EffectiveWeight float64
	State           State
	// Since is when the server entered State; Reason says why (the last
	// failing check, the counts that ejected it or opened its breaker,
	// the admin change).
	Since       time.Time
	Reason      string
	Transitions []Transition
	// LastCheck is the last failing health check's result ("" if none).
	LastCheck string
	// Ejections counts the ejections that set the current ejection time.
	Ejections int
	InFlight  int64
	Requests  uint64
	Failures  uint64
	// Entered counts the transitions into each state (indexed by State)
	// since the server's state was made, for the metrics (not the API).
	Entered [numStates]uint64
}

// OverrideStatus holds a server's admin overrides; nil when not set. Its
// JSON form is the overrides journal's (SaveOverrides).
type OverrideStatus struct {
	Weight   *int  `json:"weight"`
	Drain    *bool `json:"drain"`
	Disabled *bool `json:"disabled"`
}

// IsZero reports whether no override is set.
func (o OverrideStatus) IsZero() bool { return o.Weight == nil && o.Drain == nil && o.Disabled == nil }

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
