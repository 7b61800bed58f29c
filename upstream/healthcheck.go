package upstream

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/upstream/health"
)

// startChecks starts one health-check loop per server when the pool has
// a health block; Close stops them.
func (p *Pool) startChecks() {
	hc := p.cfg.Health
	if hc == nil || len(p.servers) == 0 || p.closed.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stopChecks = cancel
	opts := health.Options{SendProxy: p.cfg.SendProxy, H2C: p.cfg.Protocol == "h2c" || p.cfg.Protocol == "h2"}
	if p.cfg.TLS != nil {
		opts.TLS = p.transport.TLSConfig
	}
	checker := health.New(*hc, opts)
	for _, s := range p.servers {
		p.checks.Go(func() {
			defer panics.Recover("health check loop")
			health.Run(ctx, hc.Interval, hc.Jitter, health.Rand(p.rnd), func(ctx context.Context) {
				r := health.CheckTimeout(ctx, checker, s.Addr, hc.Timeout)
				if ctx.Err() == nil { // a check cut short by Close says nothing
					p.reportCheck(s, r)
				}
			}, func(v any) {
				panics.Report("health check", v, slog.String("upstream", p.cfg.Name), slog.String("server", s.Addr))
			})
		})
	}
}

// reportCheck feeds a check result to s's state machine.
func (p *Pool) reportCheck(s *Server, r health.Result) {
	hc, st, now := p.cfg.Health, s.State, p.now()
	p.expire(s, now)
	st.mu.Lock()
	m, reason := &st.m, ""
	first := !m.checked
	m.checked = true
	if r.OK {
		m.passes++
		m.fails = 0
		if !m.healthy && (m.passes >= hc.Healthy || first) {
			m.healthy = true
			reason = fmt.Sprintf("%d passing health checks (%s)", m.passes, r.Reason)
		}
	} else {
		m.fails++
		m.passes = 0
		m.lastCheck = r.Reason
		if m.healthy && m.fails >= hc.Unhealthy || !m.healthy {
			m.healthy = false
			reason = fmt.Sprintf("%d failed health checks (last: %s)", m.fails, r.Reason)
		}
	}
	tr, ok := st.settle(now, reason, p.cfg.SlowStart)
	st.mu.Unlock()
	if ok {
		p.logTransition(s, tr)
	}
}

// waitChecks waits for the health-check loops to end after Close (for
// tests), at most d.
func (p *Pool) waitChecks(d time.Duration) bool {
	done := make(chan struct{})
	panics.Go("health check wait", func() { p.checks.Wait(); close(done) })
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}
