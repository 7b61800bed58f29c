package router

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// ErrNoTCPRoute is returned by DialTCP when no tcp route of the listener
// matches the connection: the listener terminates TLS itself.
var ErrNoTCPRoute = errors.New("no tcp route matches")

// TCPConn is an upstream connection for a TCP (passthrough) route.
type TCPConn struct {
	net.Conn        // the upstream connection, tracked for tunnel_drain
	Route    string // the tcp route that matched
	Upstream string // its pool
	Server   string // the server dialed
	// Terminate is the route's `tls terminate`: the caller does the TLS
	// handshake with the client and sends the plaintext on.
	Terminate bool
}

// HasTCPRoutes reports whether any tcp route serves listener, so that a
// listener without any skips the lookup.
func (s *Snapshot) HasTCPRoutes(listener string) bool {
	tl := s.tcp[listener]
	return tl != nil && tl.table != nil
}

// DialTCP finds the tcp route of listener that matches hello and connects
// to a server of its pool, trying the pool's other servers when a connect
// fails (up to the pool's retry attempts). It returns ErrNoTCPRoute when no
// route matches. A connect failure counts against the server as for HTTP
// (outlier ejection, breaker); a connection that opens counts as a
// success. client and local are the client connection's addresses, sent
// in a PROXY protocol header when the pool has send_proxy. The caller owns
// the returned connection and must close it.
func (r *Router) DialTCP(ctx context.Context, listener string, hello *rule.TCPHello, client, local netip.AddrPort) (*TCPConn, error) {
	rc, ok := r.snap.Load().matchTCP(listener, hello)
	if !ok {
		return nil, ErrNoTCPRoute
	}
	name, up := rc.Name, rc.Upstream
	pool := r.set.Pools()[up]
	if pool == nil {
		return nil, fmt.Errorf("tcp route %s: upstream %s is gone", name, up)
	}
	cfg := pool.Config()
	var tried []*upstream.Server
	var last error
	for try := 0; try <= max(cfg.Retry.Attempts, 0); try++ {
		s, err := pool.Pick(nil, tried)
		if err != nil {
			if last != nil {
				return nil, fmt.Errorf("tcp route %s: %w", name, last)
			}
			return nil, fmt.Errorf("tcp route %s: %w", name, err)
		}
		tried = append(tried, s)
		start := time.Now()
		d := net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
		c, err := d.DialContext(ctx, "tcp", s.Addr)
		if err != nil {
			s.Done(upstream.Result{Outcome: upstream.Failure, ConnectFailed: true, Latency: time.Since(start)})
			last = fmt.Errorf("connecting to %s: %w", s.Addr, err)
			r.log.LogAttrs(ctx, slog.LevelWarn, "tcp route: connect failed",
				slog.String("route", name), slog.String("upstream", up), slog.String("server", s.Addr), slog.String("error", err.Error()))
			continue
		}
		if cfg.SendProxy != "" {
			c.SetWriteDeadline(time.Now().Add(cfg.ConnectTimeout))
			err := httpclient.WriteProxyHeader(c, cfg.SendProxy, client, local)
			c.SetWriteDeadline(time.Time{})
			if err != nil {
				c.Close()
				s.Done(upstream.Result{Outcome: upstream.Failure, ConnectFailed: true, Latency: time.Since(start)})
				last = fmt.Errorf("sending the PROXY header to %s: %w", s.Addr, err)
				continue
			}
		}
		s.Done(upstream.Result{Outcome: upstream.Success, Latency: time.Since(start)})
		tracked := r.track(c, tunnelKey{name, up, s.Addr},
			tunnelInfo{kind: kindPassthrough, listener: listener, client: client, sni: hello.SNI, start: time.Now()})
		return &TCPConn{Conn: tracked, Route: name, Upstream: up, Server: s.Addr, Terminate: rc.Terminate}, nil
	}
	return nil, fmt.Errorf("tcp route %s: %w", name, last)
}
