package upstream

import (
	"fmt"
	"time"
)

// Outlier ejection (passive health): a server that fails the requests it
// is given in a row is taken out for a while, longer each time.

// outlier counts r against the server's consecutive failures and ejects
// it at a threshold.
func (p *Pool) outlier(s *Server, r Result, failed bool) {
	o, st := p.cfg.Outlier, s.State
	if !failed {
		if st.seq5xx.Load() != 0 {
			st.seq5xx.Store(0)
		}
		if st.seqConn.Load() != 0 {
			st.seqConn.Store(0)
		}
		return
	}
	why := ""
	if r.ConnectFailed && o.ConsecutiveConnectFailures > 0 {
		if n := st.seqConn.Add(1); int(n) >= o.ConsecutiveConnectFailures {
			why = fmt.Sprintf("%d consecutive connect failures", n)
		}
	}
	if o.Consecutive5xx > 0 {
		if n := st.seq5xx.Add(1); int(n) >= o.Consecutive5xx && why == "" {
			why = fmt.Sprintf("%d consecutive 5xx or failed responses (last: %s)", n, describe(r))
		}
	}
	if why != "" {
		p.eject(s, why)
	}
}

func describe(r Result) string {
	switch {
	case r.ConnectFailed:
		return "connect failed"
	case r.Status != 0:
		return fmt.Sprintf("status %d", r.Status)
	}
	return "no valid response"
}

// eject takes s out for base_ejection times its ejection count (capped),
// unless that would eject more than max_ejection_percent of the pool.
func (p *Pool) eject(s *Server, why string) {
	o, st := p.cfg.Outlier, s.State
	p.group.ejectMu.Lock()
	defer p.group.ejectMu.Unlock()
	st.seq5xx.Store(0)
	st.seqConn.Store(0)
	ejected := 0
	for _, other := range p.servers {
		if State(other.State.state.Load()) == Ejected {
			ejected++
		}
	}
	if (ejected+1)*100 > o.MaxEjectionPercent*len(p.servers) {
		p.log.Warn("upstream server not ejected: max_ejection_percent reached",
			"upstream", p.cfg.Name, "server", s.Addr, "reason", why,
			"ejected", ejected, "max_ejection_percent", o.MaxEjectionPercent)
		return
	}
	now := p.now()
	st.mu.Lock()
	m := &st.m
	if m.ejected {
		st.mu.Unlock()
		return
	}
	if m.ejections > 0 && now.Sub(m.lastEjectEnd) > o.MaxEjection {
		m.ejections = 0 // a long good run forgives the past
	}
	m.ejections++
	d := min(o.BaseEjection*time.Duration(m.ejections), o.MaxEjection)
	m.ejected, m.ejectUntil = true, now.Add(d)
	tr, ok := st.settle(now, fmt.Sprintf("%s; ejection %d for %v", why, m.ejections, d), p.cfg.SlowStart)
	st.mu.Unlock()
	if ok {
		p.logTransition(s, tr)
	}
}

// expireAll ends the ejections and open breakers whose time has come, and
// recomputes the group's next expiry. Called with p.mu held.
func (p *Pool) expireAll(now time.Time) {
	p.group.expiry.Store(0)
	for _, s := range p.servers {
		p.expire(s, now)
	}
}

// expire ends s's ejection or open breaker when its time has come. An
// ejected server with active checks comes back unhealthy and must pass
// them first.
func (p *Pool) expire(s *Server, now time.Time) {
	st := s.State
	if u := st.until.Load(); u == 0 || u > now.UnixNano() {
		if u != 0 {
			st.group.noteExpiry(u)
		}
		return
	}
	st.mu.Lock()
	m, reason := &st.m, ""
	if m.ejected && !now.Before(m.ejectUntil) {
		m.ejected, m.lastEjectEnd, reason = false, now, "ejection ended"
		if h := p.cfg.Health; h != nil {
			m.healthy, m.passes = false, 0
			reason = fmt.Sprintf("ejection ended; waiting for %d passing health checks", h.Healthy)
		}
	}
	if m.brk == brkOpen && !now.Before(m.openUntil) {
		m.brk, m.trialOK, reason = brkHalfOpen, 0, "cool-down ended; trial requests"
		st.trials.Store(0)
	}
	tr, ok := st.settle(now, reason, p.cfg.SlowStart)
	st.mu.Unlock()
	if ok {
		p.logTransition(s, tr)
	}
}
