package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/upstream/balance"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// ErrNoServer is returned (wrapped with the pool's name) by Pick when no
// server of the pool can take traffic: none configured, all weight 0,
// drained or disabled, or all already tried by the request. Test for it
// with errors.Is.
var ErrNoServer = errors.New("no server available")

// Pool is the set of servers of one upstream block, its balancer, its
// health checks and its connection pool. Pick and Done are safe for
// concurrent use.
type Pool struct {
	cfg       conf.Upstream
	servers   []*Server
	transport *httpclient.Transport
	noServer  error
	group     *group
	log       *slog.Logger
	now       func() time.Time // the clock; tests inject one
	rnd       balance.Rand     // the random source; tests inject one

	mu     sync.Mutex // guards the policy, the counts below and pk
	policy balance.Policy
	rr     *balance.SWRR   // sticky's fallback
	random *balance.Random // hash's fallback for keyless requests
	byID   map[string]int
	epoch  uint64 // group epoch the counts were taken at
	counts counts
	pk     pick // the pick in progress

	inFlight atomic.Int64
	retries  atomic.Int64 // retries in progress (the retry budget)
	closed   atomic.Bool

	stopChecks context.CancelFunc
	checks     sync.WaitGroup
}

// counts are recomputed after any state change of the group.
type counts struct {
	servable  int  // servers neither drained, disabled nor weight 0
	healthy   int  // of those, the ones serving
	maxWeight int  // the largest weight, in weight units
	panic     bool // healthy share below the panic threshold
}

// NewPool builds a pool for cfg with fresh server state and starts its
// health checks (Close stops them). Zero durations in cfg mean no limit;
// a zero MaxIdleConns keeps 2 idle connections per server. State changes
// are logged to slog.Default.
func NewPool(cfg conf.Upstream) *Pool {
	g := new(group)
	now := time.Now()
	p := newPool(cfg, g, slog.Default(), time.Now, rand.Uint64, func(string) *ServerState {
		return newServerState(g, now, true)
	})
	p.startChecks()
	return p
}

func newPool(cfg conf.Upstream, g *group, log *slog.Logger, now func() time.Time, rnd balance.Rand,
	state func(addr string) *ServerState) *Pool {
	p := &Pool{
		cfg:       cfg,
		transport: httpclient.NewTransport(cfg),
		noServer:  fmt.Errorf("upstream %s: %w", cfg.Name, ErrNoServer),
		group:     g,
		log:       log,
		now:       now,
		rnd:       rnd,
		epoch:     ^uint64(0),
	}
	for _, sc := range cfg.Servers {
		s := &Server{Addr: sc.Addr, Weight: sc.Weight, State: state(sc.Addr), pool: p}
		s.ID = serverID(cfg.Name, sc.Addr)
		if cfg.Balance.Policy == conf.Sticky {
			s.setCookie = cfg.Balance.Name + "=" + s.ID + "; Path=/; HttpOnly; SameSite=Lax"
		}
		p.servers = append(p.servers, s)
		p.adopt(s)
	}
	p.buildPolicy()
	return p
}

// adopt fits a state to this pool's settings. A new state starts as the
// configuration says (unhealthy until checked, or healthy; ramping when
// added to a live pool); a kept one is freed from checks, ejection or a
// breaker that the new configuration no longer has.
func (p *Pool) adopt(s *Server) {
	st, now := s.State, p.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	m := &st.m
	if !m.initialized {
		p.initState(st, now)
		return
	}
	reason := ""
	if p.cfg.Health == nil && !m.healthy {
		m.healthy, reason = true, "health checks removed"
	}
	if p.cfg.Outlier == nil && m.ejected {
		m.ejected, reason = false, "outlier ejection removed"
	}
	if p.cfg.Breaker == nil && m.brk != brkClosed {
		m.brk, reason = brkClosed, "breaker removed"
	}
	if tr, ok := st.settle(now, reason, p.cfg.SlowStart); ok {
		p.logTransition(s, tr)
	}
}

// initState sets a new server's first state, without a transition.
func (p *Pool) initState(st *ServerState, now time.Time) {
	m := &st.m
	m.initialized = true
	if h := p.cfg.Health; h != nil && !h.InitialHealthy {
		m.healthy, m.reason = false, "waiting for the first health check"
	}
	m.state = m.derive()
	st.state.Store(uint32(m.state))
	if m.state == Healthy && !m.fresh && p.cfg.SlowStart > 0 {
		st.rampStart.Store(now.UnixNano())
	}
	if m.state == Healthy {
		m.fresh = false
	}
	st.group.epoch.Add(1)
}

// Name is the upstream's name.
func (p *Pool) Name() string { return p.cfg.Name }

// Config returns the configuration the pool was built from.
func (p *Pool) Config() conf.Upstream { return p.cfg }

// IdleTimeout is the upstream's idle_timeout, read per request without
// copying the whole configuration.
func (p *Pool) IdleTimeout() time.Duration { return p.cfg.IdleTimeout }

// Servers lists the pool's servers in configuration order. The slice must
// not be modified.
func (p *Pool) Servers() []*Server { return p.servers }

// Server returns the server with address addr, or nil.
func (p *Pool) Server(addr string) *Server {
	for _, s := range p.servers {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Transport is the pool's HTTP/1.1 or h2c client and connection pool,
// shared by all its servers.
func (p *Pool) Transport() *httpclient.Transport { return p.transport }

// FullDuplex reports whether the pool's servers may answer while the
// request body still streams (h2c): see httpclient.Transport.FullDuplex.
func (p *Pool) FullDuplex() bool { return p.transport.FullDuplex() }

// InFlight counts the requests picked from this pool and not yet Done.
func (p *Pool) InFlight() int64 { return p.inFlight.Load() }

// Close drains the pool and stops its health checks. Requests already
// routed to it may still Pick and finish (a request keeps the routing
// table it started with): the idle connections are closed now, and a
// connection in use is closed when its response ends instead of going
// back to the pool. Close is idempotent.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	if p.stopChecks != nil {
		p.stopChecks()
	}
	p.transport.Close()
}

// release ends one in-flight request.
func (p *Pool) release() { p.inFlight.Add(-1) }

func (p *Pool) logTransition(s *Server, tr Transition) {
	level := slog.LevelInfo
	if !tr.To.serving() {
		level = slog.LevelWarn
	}
	p.log.LogAttrs(context.Background(), level, "upstream server state changed",
		slog.String("upstream", p.cfg.Name), slog.String("server", s.Addr),
		slog.String("from", tr.From.String()), slog.String("to", tr.To.String()),
		slog.String("reason", tr.Reason))
}

// StartRetry reports whether a retry may start under the pool's retry
// budget (conf.Retry: Budget percent of the requests in flight, at least
// MinConcurrent) and, when it may, counts it until EndRetry.
func (p *Pool) StartRetry() bool {
	r := p.cfg.Retry
	limit := max(int64(r.MinConcurrent), p.inFlight.Load()*int64(r.Budget)/100)
	if p.retries.Add(1) > limit {
		p.retries.Add(-1)
		return false
	}
	return true
}

// EndRetry ends a retry StartRetry allowed.
func (p *Pool) EndRetry() { p.retries.Add(-1) }

// Retry is the pool's retry policy, read per request without copying the
// configuration; the caller must not change it.
func (p *Pool) Retry() *conf.Retry { return &p.cfg.Retry }

// MaxRequests is the pool's max_requests limit; 0: none.
func (p *Pool) MaxRequests() int { return p.cfg.MaxRequests }
