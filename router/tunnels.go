package router

import (
	"net"
	"sync"
	"time"

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
// CloseWrite), so the engine still parks and splices the socket.

// tunnelKey is what a tunnel depends on.
type tunnelKey struct {
	route, upstream, server string
}

// tunnels is the registry of live tunnels.
type tunnels struct {
	mu   sync.Mutex
	live map[*tunnelConn]tunnelKey
}

// tunnelConn is a tunnel's upstream connection.
type tunnelConn struct {
	*net.TCPConn
	reg  *tunnels
	once sync.Once
}

// Close closes the connection and forgets the tunnel.
func (c *tunnelConn) Close() error {
	c.once.Do(func() {
		c.reg.mu.Lock()
		delete(c.reg.live, c)
		c.reg.mu.Unlock()
	})
	return c.TCPConn.Close()
}

// track wraps up, the upstream side of a new tunnel, and registers it.
func (t *tunnels) track(up net.Conn, k tunnelKey) net.Conn {
	tc, ok := up.(*net.TCPConn)
	if !ok {
		return up
	}
	c := &tunnelConn{TCPConn: tc, reg: t}
	t.mu.Lock()
	if t.live == nil {
		t.live = map[*tunnelConn]tunnelKey{}
	}
	t.live[c] = k
	t.mu.Unlock()
	return c
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
		for _, rt := range hl.routes {
			if rt.pool == nil {
				continue
			}
			for _, srv := range rt.pool.Servers() {
				keep[tunnelKey{rt.name, rt.upstream, srv.Addr}] = true
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*tunnelConn
	for c, k := range t.live {
		if !keep[k] {
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
		time.AfterFunc(limit, func() { c.Close() })
	}
}
