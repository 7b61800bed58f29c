package upstream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/upstream/balance"
)

// ErrNoServer is returned (wrapped with the pool's name) by Pick when no
// server of the pool can take traffic: none configured, all weight 0, or
// (later) all unhealthy or broken. Test for it with errors.Is.
var ErrNoServer = errors.New("no server available")

// Outcome is what a proxied request says about the server that served it.
type Outcome uint8

// The outcomes a caller reports through Server.Done.
const (
	// Success: the server answered with a response (any status).
	Success Outcome = iota
	// Failure: the server could not be reached or gave no valid response
	// (refused, reset, timeout, malformed response).
	Failure
	// Abandoned: the exchange ended for a reason that says nothing about
	// the server (the client went away or stalled).
	Abandoned
)

// ServerState is the per-server state that outlives a reload: a Set hands
// the same *ServerState to every Pool generation that lists the server, keyed
// by pool name and address. Fields are atomics because every request touches
// them without a lock.
type ServerState struct {
	InFlight    atomic.Int64  // requests picked and not yet Done
	Requests    atomic.Uint64 // requests completed (any outcome)
	Failures    atomic.Uint64 // requests that ended in Failure
	LastFailure atomic.Int64  // unix nanoseconds of the last Failure; 0 if none
}

// Server is one backend of a Pool. Addr and Weight are as configured.
type Server struct {
	Addr   string
	Weight int
	State  *ServerState
	pool   *Pool
}

// Done ends a request started by Pick and records its outcome. Every
// successful Pick must be followed by exactly one Done, after the response
// body was copied (or the exchange failed), so that a draining pool knows
// when its connections are idle.
func (s *Server) Done(o Outcome) {
	s.State.InFlight.Add(-1)
	s.State.Requests.Add(1)
	if o == Failure {
		s.State.Failures.Add(1)
		s.State.LastFailure.Store(time.Now().UnixNano())
	}
	s.pool.release()
}

// Pool is the set of servers of one upstream block, its balancer and its
// connection pool. Pick and Done are safe for concurrent use.
type Pool struct {
	cfg       conf.Upstream
	servers   []*Server
	transport *Transport
	noServer  error

	mu sync.Mutex // guards rr
	rr *balance.SWRR

	inFlight atomic.Int64
	closed   atomic.Bool
}

// NewPool builds a pool for cfg with fresh server state. Zero durations in
// cfg mean no limit; a zero MaxIdleConns keeps 2 idle connections per
// server.
func NewPool(cfg conf.Upstream) *Pool {
	return newPool(cfg, func(string) *ServerState { return new(ServerState) })
}

func newPool(cfg conf.Upstream, state func(addr string) *ServerState) *Pool {
	p := &Pool{
		cfg:       cfg,
		transport: NewTransport(cfg),
		noServer:  fmt.Errorf("upstream %s: %w", cfg.Name, ErrNoServer),
	}
	weights := make([]int, len(cfg.Servers))
	for i, sc := range cfg.Servers {
		p.servers = append(p.servers, &Server{Addr: sc.Addr, Weight: sc.Weight, State: state(sc.Addr), pool: p})
		weights[i] = sc.Weight
	}
	p.rr = balance.NewSWRR(weights)
	return p
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

// Transport is the pool's HTTP/1.1 client and connection pool, shared by
// all its servers.
func (p *Pool) Transport() *Transport { return p.transport }

// Pick chooses the server for the next request and counts it in flight. It
// returns an error wrapping ErrNoServer when no server can take traffic.
// The caller must call Done on the returned server.
func (p *Pool) Pick() (*Server, error) {
	p.mu.Lock()
	i := p.rr.Next(nil)
	p.mu.Unlock()
	if i < 0 {
		return nil, p.noServer
	}
	s := p.servers[i]
	p.inFlight.Add(1)
	s.State.InFlight.Add(1)
	return s, nil
}

// Close drains the pool. Requests already routed to it may still Pick and
// finish (a request keeps the routing table it started with): the idle
// connections are closed now, and a connection in use is closed when its
// response ends instead of going back to the pool. Close is idempotent.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return
	}
	p.transport.Close()
}

// release ends one in-flight request.
func (p *Pool) release() { p.inFlight.Add(-1) }
