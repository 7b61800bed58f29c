package httpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// upstreamTLS is a pool's TLS client side, built once per load: one
// tls.Config per server (its ServerName set), all sharing the pool's
// session cache, so a new connection resumes the last session.
type upstreamTLS struct {
	base    *tls.Config
	servers map[string]*tls.Config // by server address; read-only
	err     error                  // the config could not be built (conf validates; kept for safety)
	h2      bool                   // ALPN must pick h2
}

// errNoH2 is a protocol h2 server whose ALPN did not pick h2: edgeway
// never falls back to HTTP/1.1 there (gRPC needs HTTP/2).
var errNoH2 = errors.New("server did not negotiate h2 by ALPN (protocol h2 does not fall back to HTTP/1.1)")

// alertNoALPN is the text of the TLS alert no_application_protocol
// (RFC 7301, section 3.2), a server that offers none of the protocols
// asked for; crypto/tls does not export the type of a received alert.
const alertNoALPN = "no application protocol"

func newUpstreamTLS(cfg conf.Upstream) *upstreamTLS {
	if cfg.TLS == nil {
		return nil
	}
	u := &upstreamTLS{servers: make(map[string]*tls.Config, len(cfg.Servers)), h2: cfg.Protocol == "h2"}
	u.base, u.err = cfg.TLS.ClientConfig(cfg.Protocol)
	if u.err != nil {
		return u
	}
	for _, s := range cfg.Servers {
		u.servers[s.Addr] = u.forServer(s.Addr, cfg.TLS.ServerName)
	}
	return u
}

// forServer is base with the name to send and verify: server_name, or
// the host of addr.
func (u *upstreamTLS) forServer(addr, name string) *tls.Config {
	c := u.base.Clone()
	c.ClientSessionCache = u.base.ClientSessionCache
	if name == "" {
		name, _, _ = net.SplitHostPort(addr)
	}
	c.ServerName = name
	return c
}

// config returns the tls.Config of addr; an address outside the files
// (tests, runtime additions) gets one built on the spot.
func (u *upstreamTLS) config(addr string) *tls.Config {
	if c := u.servers[addr]; c != nil {
		return c
	}
	return u.forServer(addr, "")
}

// handshake runs the TLS handshake on nc, bounded by timeout (0: only
// ctx). A failed verification, like any failed handshake, is a
// KindConnect *Error naming the server: the server's fault, counted
// against it.
func (u *upstreamTLS) handshake(ctx context.Context, nc net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
	if u.err != nil {
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: u.err}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tc := tls.Client(nc, u.config(addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		if u.h2 && strings.Contains(err.Error(), alertNoALPN) {
			err = fmt.Errorf("%w: %w", errNoH2, err)
		}
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: fmt.Errorf("tls handshake: %w", err)}
	}
	if u.h2 && tc.ConnectionState().NegotiatedProtocol != "h2" {
		tc.Close()
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: errNoH2}
	}
	return tc, nil
}

// TLSConfig returns the tls.Config the transport dials addr with, for
// health checks that must see what requests see; nil without a tls
// block (or when it could not be built).
func (t *Transport) TLSConfig(addr string) *tls.Config {
	if t.tls == nil || t.tls.err != nil {
		return nil
	}
	return t.tls.config(addr)
}
