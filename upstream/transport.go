package upstream

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// Transport is the HTTP/1.1 client of one upstream: a keep-alive pool per
// server and a round trip that runs on the caller's goroutine (a goroutine
// more only while a request body streams). It speaks HTTP/1.1 only, ignores
// proxy settings and never asks for compression, so bodies pass through
// byte for byte. Headers go out as given: callers remove hop-by-hop fields
// (the router does). Response heads are parsed in a pooled buffer into
// edgeway's own field lists (internal/http1), with no allocation.
//
// Compared with http.Transport it has no per-connection read and write
// goroutines: an idle server close is noticed when the connection is
// checked out (a non-blocking peek before every reuse) or, for an
// idempotent request without a body, by one retry on a new connection.
type Transport struct {
	dialer      net.Dialer
	respTimeout time.Duration
	idleTimeout time.Duration
	maxIdle     int

	hosts map[string]*hostPool // the configured servers; read-only
	extra sync.Map             // other addresses: string -> *hostPool

	lim         *limiter // nil: no connection limit
	connTimeout time.Duration

	closed atomic.Bool
	mu     sync.Mutex // guards reaper
	reaper *time.Timer
}

// maxHeaderBytes caps a response head (status line and headers, 1xx
// responses included).
const maxHeaderBytes = 1 << 20

// NewTransport builds the connection pools of cfg's servers. Zero
// durations mean no limit; a zero MaxIdleConns keeps 2 idle connections
// per server.
func NewTransport(cfg conf.Upstream) *Transport {
	t := &Transport{
		dialer:      net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second},
		respTimeout: cfg.ResponseTimeout,
		idleTimeout: cfg.IdleTimeout,
		maxIdle:     cfg.MaxIdleConns,
		hosts:       make(map[string]*hostPool, len(cfg.Servers)),
		lim:         newLimiter(cfg.MaxConnections, cfg.MaxPending),
		connTimeout: cfg.ConnectTimeout,
	}
	if t.maxIdle <= 0 {
		t.maxIdle = 2
	}
	for _, s := range cfg.Servers {
		t.hosts[s.Addr] = &hostPool{addr: s.Addr, t: t}
	}
	if t.idleTimeout > 0 {
		t.mu.Lock()
		t.reaper = time.AfterFunc(t.reapEvery(), t.reap)
		t.mu.Unlock()
	}
	return t
}

// Close closes the idle connections and stops pooling: a connection in
// use is closed when its response ends. Requests may still be sent; each
// then uses a new connection. Close is idempotent.
func (t *Transport) Close() {
	if t.closed.Swap(true) {
		return
	}
	t.mu.Lock()
	if t.reaper != nil {
		t.reaper.Stop()
	}
	t.mu.Unlock()
	t.eachHost(func(hp *hostPool) { hp.closeIdle(0) })
}

// IdleConns counts the pooled idle connections of all servers.
func (t *Transport) IdleConns() int {
	n := 0
	t.eachHost(func(hp *hostPool) {
		hp.mu.Lock()
		n += len(hp.idle)
		hp.mu.Unlock()
	})
	return n
}

func (t *Transport) eachHost(fn func(*hostPool)) {
	for _, hp := range t.hosts {
		fn(hp)
	}
	t.extra.Range(func(_, v any) bool {
		fn(v.(*hostPool))
		return true
	})
}

func (t *Transport) reapEvery() time.Duration { return max(t.idleTimeout/2, time.Second) }

// reap closes the connections idle for longer than IdleTimeout; one timer
// per transport does it for all servers.
func (t *Transport) reap() {
	cutoff := monotonic() - int64(t.idleTimeout)
	t.eachHost(func(hp *hostPool) { hp.closeIdle(cutoff) })
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed.Load() {
		t.reaper.Reset(t.reapEvery())
	}
}

func (t *Transport) host(addr string) *hostPool {
	if hp := t.hosts[addr]; hp != nil {
		return hp
	}
	if v, ok := t.extra.Load(addr); ok {
		return v.(*hostPool)
	}
	v, _ := t.extra.LoadOrStore(addr, &hostPool{addr: addr, t: t})
	return v.(*hostPool)
}

var epoch = time.Now()

// monotonic is a cheap monotonic clock in nanoseconds.
func monotonic() int64 { return int64(time.Since(epoch)) }

// hostPool is the idle stack of one server: last in, first out, so that a
// small working set of connections stays warm and the rest age out.
type hostPool struct {
	addr string
	t    *Transport

	mu   sync.Mutex
	idle []*conn // oldest first
}

// get returns an idle connection or dials a new one. With a connection
// limit, a request that finds neither an idle connection nor a free slot
// waits for one (max_pending of them at most), up to the connect timeout.
func (hp *hostPool) get(ctx context.Context) (*conn, error) {
	now := monotonic()
	var wait *waiter
	defer wait.stop()
	for {
		var wake chan struct{}
		if lim := hp.t.lim; lim != nil {
			wake = lim.current()
		}
		hp.mu.Lock()
		n := len(hp.idle)
		if n == 0 {
			hp.mu.Unlock()
			if wake == nil || hp.t.lim.acquire() {
				return hp.dial(ctx, wake != nil)
			}
			if wait == nil {
				wait = newWaiter(hp.t)
			}
			if err := wait.on(ctx, wake); err != nil {
				return nil, err
			}
			continue
		}
		c := hp.idle[n-1]
		hp.idle[n-1] = nil
		hp.idle = hp.idle[:n-1]
		hp.mu.Unlock()
		age := now - c.idleAt
		// Every reuse peeks first: a server that closed the connection, or
		// one that sent bytes after its last response (a body after a HEAD
		// or 204 answer, a response nobody asked for), must not be handed
		// the next request, or that request would read those bytes as its
		// response.
		if (hp.t.idleTimeout > 0 && age > int64(hp.t.idleTimeout)) || !c.probe.alive() {
			c.close()
			continue
		}
		c.reused = true
		return c, nil
	}
}

// dial opens a connection; slot says it holds a slot of the limiter.
func (hp *hostPool) dial(ctx context.Context, slot bool) (*conn, error) {
	nc, err := hp.t.dialer.DialContext(ctx, "tcp", hp.addr)
	if err != nil {
		if slot {
			hp.t.lim.release()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Kind: KindConnect, Addr: hp.addr, Err: err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := newConn(nc, hp)
	c.slot = slot
	return c, nil
}

// put pools a connection whose exchange ended cleanly, or closes it when
// the pool is full or closed.
func (hp *hostPool) put(c *conn) {
	c.idleAt = monotonic()
	hp.mu.Lock()
	if hp.t.closed.Load() || len(hp.idle) >= hp.t.maxIdle {
		hp.mu.Unlock()
		c.close()
		return
	}
	hp.idle = append(hp.idle, c)
	hp.mu.Unlock()
	if hp.t.lim != nil {
		hp.t.lim.pooled()
	}
}

// closeIdle closes the idle connections that went idle before cutoff
// (monotonic ns); cutoff 0 closes them all.
func (hp *hostPool) closeIdle(cutoff int64) {
	hp.mu.Lock()
	n := 0
	for n < len(hp.idle) && (cutoff == 0 || hp.idle[n].idleAt < cutoff) {
		hp.idle[n].close()
		n++
	}
	if n > 0 {
		rest := copy(hp.idle, hp.idle[n:])
		clear(hp.idle[rest:])
		hp.idle = hp.idle[:rest]
	}
	hp.mu.Unlock()
}
