package router

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/upstream"
)

// Tunnels and reloads. A reload never touches a tunnel whose route and
// upstream server are still in the configuration. A tunnel whose route or
// server left it is given conf.Config.TunnelDrain to finish and then
// closed (its upstream connection is closed, which ends both sides); with
// no drain limit it runs until its peers close it.
//
// Each tunnel's upstream connection is wrapped so that the registry
// learns when the front end closes it: the registry holds only live
// tunnels. The wrapper keeps *net.TCPConn's methods (SyscallConn,
// CloseWrite) for the front ends that copy through it, and hands the
// socket to the engine (httpmsg.TunnelSocket), which parks and splices it
// as its own descriptor. It is
// also an httpmsg.TunnelReporter: the front end tells it how the tunnel
// ended and what it carried, which becomes one access-log line
// (msg=tunnel) and the edgeway_tunnel* metrics.

// tunnelKey is what a tunnel depends on.
type tunnelKey struct {
	route, upstream, server string
}

// Tunnel kinds (the kind label and log field).
const (
	kindWebSocket   = "websocket"   // a 101 to Upgrade: websocket
	kindUpgrade     = "upgrade"     // a 101 to any other protocol
	kindPassthrough = "passthrough" // a tcp route's TLS passthrough
)

// tunnelDrained is TunnelEnd.How for a tunnel a reload ended.
const tunnelDrained = "drained"

// tunnelInfo is what a tunnel's log line says besides its end.
type tunnelInfo struct {
	kind     string
	listener string
	client   netip.AddrPort
	sni      string // passthrough: the ClientHello's name
	reqID    string // upgrades: the request's ID (a heap string)
	start    time.Time
}

// tunnels is the registry of live tunnels (each knows its key).
type tunnels struct {
	mu   sync.Mutex
	live map[*tunnelConn]struct{}
}

// tunnelConn is a tunnel's upstream connection. Its socket is nil once
// handed over (TunnelSocket).
type tunnelConn struct {
	*net.TCPConn
	mu      sync.Mutex // TCPConn's handover against Close
	reg     *tunnels
	r       *Router
	key     tunnelKey
	info    tunnelInfo
	end     atomic.Pointer[func()] // ends the tunnel (TunnelStarted)
	drained atomic.Bool            // a reload ended it
	told    atomic.Bool            // its end was logged
	once    sync.Once
}

// TunnelStarted implements httpmsg.TunnelReporter. A drain that came
// before it found no end to call, and its Close could not end a tunnel
// whose socket was already handed over (TunnelSocket): it ends now.
func (c *tunnelConn) TunnelStarted(end func()) {
	c.end.Store(&end)
	if c.drained.Load() {
		end()
	}
}

// TunnelEnded implements httpmsg.TunnelReporter: the tunnel's line and
// metrics.
func (c *tunnelConn) TunnelEnded(e httpmsg.TunnelEnd) {
	if !c.told.CompareAndSwap(false, true) {
		return
	}
	if c.drained.Load() {
		e.How = tunnelDrained
	}
	c.r.tunnelEnded(c, e)
}

// TunnelSocket implements httpmsg.TunnelSocket: the bytes are the
// socket's as they are. The wrapper forgets the socket, so that an idle
// tunnel does not keep its netFD; only Close and the reports are called
// after it.
func (c *tunnelConn) TunnelSocket() *net.TCPConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	tc := c.TCPConn
	c.TCPConn = nil
	return tc
}

// Close closes the connection and forgets the tunnel. A front end that
// did not report the tunnel's end (it never started) gets its line here.
func (c *tunnelConn) Close() error {
	c.once.Do(func() {
		c.reg.mu.Lock()
		delete(c.reg.live, c)
		c.reg.mu.Unlock()
	})
	c.TunnelEnded(httpmsg.TunnelEnd{How: httpmsg.TunnelError})
	c.mu.Lock()
	tc := c.TCPConn
	c.mu.Unlock()
	if tc == nil {
		return nil // the front end owns and closes the socket
	}
	return tc.Close()
}

// drain ends the tunnel: both sides, through the front end when it gave
// the means, else by closing the upstream side (and TunnelStarted ends it
// when it comes after). drained is stored before end is loaded, and
// TunnelStarted stores end before it loads drained: at least one of them
// sees the other, and ending twice is harmless.
func (c *tunnelConn) drain() {
	c.drained.Store(true)
	if end := c.end.Load(); end != nil {
		(*end)()
		return
	}
	c.Close()
}

// track wraps up, the upstream side of a new tunnel, and registers it.
func (r *Router) track(up net.Conn, k tunnelKey, info tunnelInfo) net.Conn {
	tc, ok := up.(*net.TCPConn)
	if !ok {
		return up
	}
	t := &r.tunnels
	c := &tunnelConn{TCPConn: tc, reg: t, r: r, key: k, info: info}
	t.mu.Lock()
	if t.live == nil {
		t.live = map[*tunnelConn]struct{}{}
	}
	t.live[c] = struct{}{}
	t.mu.Unlock()
	return c
}

// tunnelEnded writes a tunnel's access-log line and counts it.
func (r *Router) tunnelEnded(c *tunnelConn, e httpmsg.TunnelEnd) {
	d := time.Since(c.info.start)
	if r.metrics != nil {
		r.metrics.tunnels.ended(c.info.listener, c.key.route, c.info.kind, e, d)
	}
	ctx := context.Background()
	if r.access == nil || !r.access.Enabled(ctx, slog.LevelInfo) {
		return
	}
	attrs := [...]slog.Attr{
		slog.String("listener", c.info.listener),
		slog.String("kind", c.info.kind),
		slog.String("client", c.info.client.String()),
		slog.String("route", c.key.route),
		slog.String("upstream", c.key.upstream),
		slog.String("server", c.key.server),
		slog.Int64("bytes_to_server", e.ToUpstream),
		slog.Int64("bytes_to_client", e.ToClient),
		slog.Float64("duration", d.Seconds()),
		slog.String("end", e.How),
		slog.String("sni", c.info.sni),
		slog.String("request_id", c.info.reqID),
	}
	n := len(attrs)
	if c.info.kind == kindPassthrough {
		n-- // no request
	} else {
		attrs[n-2] = attrs[n-1] // no SNI seen (TLS was terminated, or none)
		n--
	}
	r.access.LogAttrs(ctx, slog.LevelInfo, "tunnel", attrs[:n]...)
}

// orphaned returns the tunnels whose route or server is not in s (tcp
// routes' servers are looked up in pools).
func (t *tunnels) orphaned(s *Snapshot, pools map[string]*upstream.Pool) []*tunnelConn {
	keep := map[tunnelKey]bool{}
	for _, tl := range s.tcp {
		for _, rt := range tl.routes {
			if p := pools[rt.Upstream]; p != nil {
				for _, srv := range p.Servers() {
					keep[tunnelKey{rt.Name, rt.Upstream, srv.Addr}] = true
				}
			}
		}
	}
	for _, hl := range s.http {
		for _, base := range hl.routes {
			for _, rt := range base.targets() { // a split's variants
				if rt.pool == nil {
					continue
				}
				for _, srv := range rt.pool.Servers() {
					keep[tunnelKey{rt.name, rt.upstream, srv.Addr}] = true
				}
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*tunnelConn
	for c := range t.live {
		if !keep[c.key] {
			out = append(out, c)
		}
	}
	return out
}

// drain closes the orphaned tunnels after limit; 0 leaves them alone.
func (r *Router) drainTunnels(s *Snapshot, limit time.Duration) {
	if limit <= 0 {
		return
	}
	for _, c := range r.tunnels.orphaned(s, r.set.Pools()) {
		time.AfterFunc(limit, c.drain)
	}
}
