package httpclient

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// Transport is the client of one upstream: a keep-alive pool per server
// and a round trip that runs on the caller's goroutine.
//
// For HTTP/1.1 (the default) it is purpose-built: a goroutine more only
// while a request body streams, no proxy settings, never asking for
// compression, so bodies pass through byte for byte. Headers go out as
// given, except that fields the writer frames itself (Host,
// Content-Length, Transfer-Encoding) are never copied from the request,
// and a field that is not valid HTTP fails the request with a
// *RequestError before anything is written: the callers remove hop-by-hop
// fields (the router does). Response heads are parsed in a pooled buffer
// into edgeway's own field lists (internal/http1), with no allocation.
// Compared with http.Transport it has no per-connection read and write
// goroutines: an idle server close is noticed when the connection is
// checked out (a non-blocking peek before every reuse) or, for an
// idempotent request without a body, by one retry on a new connection.
//
// For a pool with protocol h2c it speaks HTTP/2 with prior knowledge
// (golang.org/x/net/http2 client connections over plain TCP, see h2.go):
// a few multiplexed connections per server, request and response bodies
// streaming at the same time (gRPC bidi), trailers both ways. That path
// costs what x/net/http2 costs (a goroutine per connection, header maps
// per request).
//
// With send_proxy every new connection starts with a PROXY header for
// the client of the request that opened it, and only requests of that
// same client (address and port) reuse it: idle HTTP/1.1 connections are
// keyed by client, h2c connections too. The cost: little reuse for many
// short-lived clients (a client's keep-alive requests still share one
// connection), and idle connections that speak for clients that left
// until the idle timeout closes them (90s when the pool sets none).
type Transport struct {
	// fallbacks holds the addresses of a `protocol h2` with `fallback http1`
	// pool's servers that picked http/1.1: spoken to over HTTP/1.1 for
	// the transport's life (a reload makes a new one, trying h2 again).
	fallbacks   sync.Map
	dialer      net.Dialer
	respTimeout time.Duration
	idleTimeout time.Duration
	maxIdle     int
	proxyVer    byte         // PROXY header version; 0: none
	h2          *h2Client    // non-nil for protocol h2c and h2
	tls         *upstreamTLS // non-nil with a tls block

	hosts map[string]*hostPool // the configured servers; read-only
	extra sync.Map             // other addresses: string -> *hostPool

	lim         *limiter // nil: no connection limit
	connTimeout time.Duration

	closed atomic.Bool
	mu     sync.Mutex // guards reaper
	reaper *time.Timer
}

// keyedIdleTimeout is the idle timeout of connections opened with a
// PROXY header when the pool sets none: they speak for one client and
// must not stay forever after it left.
const keyedIdleTimeout = 90 * time.Second

// maxHeaderBytes caps a response head (status line and headers, 1xx
// responses included).
const maxHeaderBytes = 1 << 20

// NewTransport builds the connection pools of cfg's servers. Zero
// durations mean no limit; a zero MaxIdleConns keeps 2 idle connections
// per server. cfg.Protocol "h2c" selects HTTP/2 with prior knowledge, any
// other value HTTP/1.1; cfg.SendProxy "v1" or "v2" starts each connection
// with a PROXY header (conf validates both; another SendProxy value sends
// none).
func NewTransport(cfg conf.Upstream) *Transport {
	ver, _ := proxyVersion(cfg.SendProxy)
	if ver != 0 && cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = keyedIdleTimeout
	}
	t := &Transport{
		proxyVer:    ver,
		dialer:      net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second},
		respTimeout: cfg.ResponseTimeout,
		idleTimeout: cfg.IdleTimeout,
		maxIdle:     cfg.MaxIdleConns,
		hosts:       make(map[string]*hostPool, len(cfg.Servers)),
		lim:         newLimiter(cfg.MaxConnections, cfg.MaxPending),
		connTimeout: cfg.ConnectTimeout,
		tls:         newUpstreamTLS(cfg),
	}
	if t.maxIdle <= 0 {
		t.maxIdle = 2
	}
	for _, s := range cfg.Servers {
		t.hosts[s.Addr] = &hostPool{addr: s.Addr, t: t}
	}
	if p := upstreamProtocol(cfg); p == "h2c" || p == "h2" {
		t.h2 = newH2Client(t)
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
	if t.h2 != nil {
		t.h2.close()
	}
}

// idleConns counts the pooled idle connections of all servers (for
// h2c, the open connections with no stream in flight).
func (t *Transport) idleConns() int {
	n := 0
	if t.h2 != nil {
		n += t.h2.idleConns()
	}
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
	if t.h2 != nil {
		t.h2.prune()
	}
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
// With send_proxy only a connection opened for req.Client is reused, and
// when the limit is reached the oldest idle connection of another client
// is closed to make room.
func (hp *hostPool) get(ctx context.Context, req *Request) (*conn, error) {
	now := monotonic()
	var wait *waiter
	defer wait.stop()
	for {
		var wake chan struct{}
		if lim := hp.t.lim; lim != nil {
			wake = lim.current()
		}
		hp.mu.Lock()
		i := hp.lastIdle(req.Client)
		if i < 0 {
			evict := hp.t.proxyVer != 0 && wake != nil && len(hp.idle) > 0
			hp.mu.Unlock()
			if wake == nil || hp.t.lim.acquire() {
				return hp.dial(ctx, wake != nil, req)
			}
			if evict {
				hp.closeOldest()
				continue
			}
			if wait == nil {
				wait = newWaiter(hp.t)
			}
			if err := wait.on(ctx, wake); err != nil {
				return nil, err
			}
			continue
		}
		c := hp.idle[i]
		hp.idle = slices.Delete(hp.idle, i, i+1)
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

// lastIdle returns the index of the most recently pooled connection that
// may carry a request of client, or -1. Under hp.mu.
func (hp *hostPool) lastIdle(client netip.AddrPort) int {
	if hp.t.proxyVer == 0 {
		return len(hp.idle) - 1
	}
	for i := len(hp.idle) - 1; i >= 0; i-- {
		if hp.idle[i].client == client {
			return i
		}
	}
	return -1
}

// closeOldest closes the connection idle the longest, if any.
func (hp *hostPool) closeOldest() {
	hp.mu.Lock()
	var c *conn
	if len(hp.idle) > 0 {
		c = hp.idle[0]
		hp.idle = slices.Delete(hp.idle, 0, 1)
	}
	hp.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// dial opens a connection for req; slot says it holds a slot of the
// limiter.
func (hp *hostPool) dial(ctx context.Context, slot bool, req *Request) (*conn, error) {
	start := monotonic()
	nc, err := hp.t.dialConn(ctx, hp.addr, req, true)
	if err != nil {
		if slot {
			hp.t.lim.release()
		}
		return nil, err
	}
	c := newConn(nc, hp)
	c.slot, c.client, c.dialNs = slot, req.Client, monotonic()-start
	return c, nil
}

// fellBack reports whether addr is spoken to over HTTP/1.1 although the
// pool is h2 (`fallback http1`).
func (t *Transport) fellBack(addr string) bool {
	if t.tls == nil || !t.tls.fallback {
		return false
	}
	_, ok := t.fallbacks.Load(addr)
	return ok
}

// dialConn opens a TCP connection to addr and, with send_proxy, writes
// the PROXY header for req's client. Failures are the context's error or
// a KindConnect *Error: nothing of the request was sent.
//
// h1 is the HTTP/1.1 pool's dial (for a pool with `fallback http1`, its
// TLS offers only http/1.1), false the HTTP/2 client's.
func (t *Transport) dialConn(ctx context.Context, addr string, req *Request, h1 bool) (net.Conn, error) {
	dialer, connTimeout := &t.dialer, t.connTimeout
	if req != nil && req.ConnectTimeout > 0 {
		d := t.dialer
		d.Timeout, connTimeout = req.ConnectTimeout, req.ConnectTimeout
		dialer = &d
	}
	nc, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: err}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if t.proxyVer != 0 {
		if err := t.sendProxy(nc, req); err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &Error{Kind: KindConnect, Addr: addr, Err: err}
		}
	}
	if t.tls != nil {
		tc, err := t.tls.handshake(ctx, nc, addr, connTimeout, h1)
		if err != nil {
			nc.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		return tc, nil
	}
	return nc, nil
}

// sendProxy writes the PROXY header, bounded by the connect timeout.
func (t *Transport) sendProxy(nc net.Conn, req *Request) error {
	b, err := proxyHeader(t.proxyVer, req.Client, req.Local)
	if err != nil {
		return err
	}
	if t.connTimeout > 0 {
		_ = nc.SetWriteDeadline(time.Now().Add(t.connTimeout))
		defer nc.SetWriteDeadline(time.Time{})
	}
	if _, err := nc.Write(b); err != nil {
		return fmt.Errorf("writing the PROXY header: %w", err)
	}
	return nil
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
