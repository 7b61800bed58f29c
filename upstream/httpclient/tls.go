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
	h2      bool                   // ALPN must pick h2 (unless fallback)
	// fallback (`protocol h2` with `fallback http1`): the HTTP/2 dial offers h2
	// and http/1.1, and a server that picks http/1.1 is spoken to over
	// HTTP/1.1 (Transport.fellBack); the HTTP/1.1 pool's own dials offer
	// only http/1.1 (h1servers), so that none of its connections is h2.
	fallback  bool
	h1servers map[string]*tls.Config
}

// errNoH2 is a protocol h2 server whose ALPN did not pick h2: edgeway
// never falls back to HTTP/1.1 there (gRPC needs HTTP/2).
var errNoH2 = errors.New("server did not negotiate h2 by ALPN (protocol h2 does not fall back to HTTP/1.1)")

// errFellBack is a fallback pool's server that did not pick h2: the
// request goes over HTTP/1.1 instead (Transport.Do), nothing of it sent.
var errFellBack = errors.New("server did not negotiate h2 by ALPN; falling back to HTTP/1.1")

// alertNoALPN is the text of the TLS alert no_application_protocol
// (RFC 7301, section 3.2), a server that offers none of the protocols
// asked for; crypto/tls does not export the type of a received alert.
const alertNoALPN = "no application protocol"

func newUpstreamTLS(cfg conf.Upstream) *upstreamTLS {
	if cfg.TLS == nil {
		return nil
	}
	u := &upstreamTLS{servers: make(map[string]*tls.Config, len(cfg.Servers)), h2: cfg.Protocol == "h2"}
	proto := cfg.Protocol
	if u.h2 && cfg.H2Fallback {
		u.fallback, proto = true, "h2+http1"
		u.h1servers = make(map[string]*tls.Config, len(cfg.Servers))
	}
	u.base, u.err = cfg.TLS.ClientConfig(proto)
	if u.err != nil {
		return u
	}
	for _, s := range cfg.Servers {
		u.servers[s.Addr] = u.forServer(s.Addr, cfg.TLS.ServerName)
		if u.fallback {
			u.h1servers[s.Addr] = h1Only(u.servers[s.Addr])
		}
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

// h1Only is c offering only http/1.1 by ALPN (the session cache shared).
func h1Only(c *tls.Config) *tls.Config {
	h := c.Clone()
	h.ClientSessionCache = c.ClientSessionCache
	h.NextProtos = []string{"http/1.1"}
	return h
}

// config returns the tls.Config of addr; an address outside the files
// (tests, runtime additions) gets one built on the spot. h1 is the
// HTTP/1.1 pool's dial of a fallback pool.
func (u *upstreamTLS) config(addr string, h1 bool) *tls.Config {
	if h1 && u.fallback {
		if c := u.h1servers[addr]; c != nil {
			return c
		}
		return h1Only(u.forServer(addr, ""))
	}
	if c := u.servers[addr]; c != nil {
		return c
	}
	return u.forServer(addr, "")
}

// handshake runs the TLS handshake on nc, bounded by timeout (0: only
// ctx). A failed verification, like any failed handshake, is a
// KindConnect *Error naming the server: the server's fault, counted
// against it.
func (u *upstreamTLS) handshake(ctx context.Context, nc net.Conn, addr string, timeout time.Duration, h1 bool) (net.Conn, error) {
	if u.err != nil {
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: u.err}
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tc := tls.Client(nc, u.config(addr, h1))
	if err := tc.HandshakeContext(ctx); err != nil {
		if u.h2 && !u.fallback && strings.Contains(err.Error(), alertNoALPN) {
			err = fmt.Errorf("%w: %w", errNoH2, err)
		}
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: fmt.Errorf("tls handshake: %w", err)}
	}
	if u.h2 && !h1 && tc.ConnectionState().NegotiatedProtocol != "h2" {
		tc.Close()
		if u.fallback {
			return nil, &Error{Kind: KindConnect, Addr: addr, Err: errFellBack}
		}
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
	return t.tls.config(addr, t.h2 == nil || t.tls.fallback)
}
