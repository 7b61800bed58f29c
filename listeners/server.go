// Package listeners holds edgeway's protocol front ends. Server is the
// cleartext one: HTTP/1.1 and h2c (HTTP/2 with prior knowledge) on one
// port. The connection engine (listeners/engine) owns the sockets: an idle
// keep-alive connection is parked on its epoll loop and holds no goroutine
// and no buffer; when bytes arrive, the HTTP/1 server (listeners/http1)
// parses the request in place and hands edgeway's own request type to the
// router. A connection that opens with the HTTP/2 preface is handed to
// edgeway's own HTTP/2 server (listeners/h2conn), which fills the same
// request type (or, with h2_server xnet, to golang.org/x/net/http2,
// whose requests reach the router through the net/http adapter,
// internal/stdhttp). The tradeoff: an HTTP/2 connection keeps its
// goroutines (a read loop and a writer) while idle, so only HTTP/1
// connections get the parked cost.
package listeners

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/listeners/engine"
	"github.com/edgeway/edgeway/listeners/h2conn"
	"github.com/edgeway/edgeway/listeners/http1"
	"github.com/edgeway/edgeway/listeners/sniff"
)

// Server is one cleartext listener. Its methods are safe for concurrent
// use.
type Server struct {
	name  string
	eng   *engine.Engine
	h1    *http1.Server
	h2    *h2Fronts // nil when the listener serves no HTTP/2
	front *front    // nil without TLS or PROXY protocol
}

// Options are what a listener needs besides its configuration.
type Options struct {
	// TLS is the listener's TLS configuration (certificates from the
	// store, versions, ALPN); required when cfg.Protocols has "tls". Its
	// NextProtos is set from the protocols.
	TLS *tls.Config
	// Passthrough, when non-nil, is asked about every ClientHello on a
	// TLS listener: it returns an open connection to the upstream of the
	// tcp route that matches, and the raw TLS stream (ClientHello
	// included) is then copied both ways; ErrNoRoute means "terminate
	// here". Any other error closes the client connection. client and
	// local are the connection's addresses (from its PROXY header when the
	// listener reads one). The listener knows no routes: what a tcp route
	// matches on is built from h by the caller.
	Passthrough func(ctx context.Context, h *sniff.Hello, client, local netip.AddrPort) (net.Conn, error)
	// Refused, when non-nil, is told of every request the listener
	// answers itself before the handler (http1.Config.Refused), every
	// HTTP/2 stream or connection error the client caused, and every
	// connection refused before HTTP (PROXY header, TLS). It runs on the
	// connection's goroutine and must be quick (count, log).
	Refused func(httpmsg.Refusal)
}

// ErrNoRoute is what Options.Passthrough returns when no tcp route claims
// a connection.
var ErrNoRoute = errors.New("no tcp route")

// Listen binds cfg.Addr and prepares h to be served on it; Serve starts
// serving. cfg is a listen block as conf.Load or conf.DefaultListener
// makes it, defaults filled in: its values are taken as they are. A nil
// log uses slog.Default.
func Listen(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger) (*Server, error) {
	return ListenWith(cfg, h, log, Options{})
}

// ListenWith is Listen with Options: TLS termination and passthrough.
func ListenWith(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger, o Options) (*Server, error) {
	p, err := parseProtocols(cfg.Protocols)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
	}
	if p.tls && o.TLS == nil {
		return nil, fmt.Errorf("listener %s: a TLS listener needs a TLS configuration", cfg.Name)
	}
	if log == nil {
		log = slog.Default()
	}
	base := log // http1 names the listener itself
	log = log.With("listener", cfg.Name)
	s := &Server{name: cfg.Name}
	hc := http1.Config{
		Name: cfg.Name, Handler: h, ReadHeaderTimeout: cfg.ReadHeaderTimeout, WriteTimeout: writeTimeout(cfg),
		MaxHeaderBytes: cfg.MaxHeaderBytes, Log: base, Refused: o.Refused,
		Shutting: func() bool { return s.eng != nil && s.eng.Shutting() },
	}
	if p.h2c || p.h2 {
		f, err := newH2Fronts(cfg, h, log, o.Refused)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
		}
		s.h2 = f
		switch {
		case p.h2c && cfg.H2Server == "own":
			hc.H2CEngine, hc.Resume = f.serveH2C, h2conn.Resume
		case p.h2c:
			hc.H2C = f.serve
		}
	}
	s.h1 = http1.New(hc)
	var eh engine.Handler = s.h1
	if p.tls || cfg.ProxyProtocol != nil {
		s.front = newFront(cfg, p, s, o, log)
		eh = s.front
	}
	eng, err := engine.Listen(engineConfig(cfg), eh, log)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
	}
	s.eng = eng
	return s, nil
}

// writeTimeout maps the listener's write_timeout to the HTTP/1 server's:
// conf's 0 (off) is "no limit" there.
func writeTimeout(cfg conf.Listener) time.Duration {
	if cfg.WriteTimeout <= 0 {
		return -1
	}
	return cfg.WriteTimeout
}

// protocolSet is what a listener's protocols turn on.
type protocolSet struct {
	http1, h2c, tls, h2 bool
}

// parseProtocols checks the protocol names. A cleartext listener always
// serves HTTP/1 (the engine's first protocol); a TLS listener offers
// http1 and h2 by ALPN, both when neither is named.
func parseProtocols(names []string) (protocolSet, error) {
	var p protocolSet
	for _, n := range names {
		switch n {
		case "http1":
			p.http1 = true
		case "h2c":
			p.h2c = true
		case "h2":
			p.h2 = true
		case "tls":
			p.tls = true
		case "h3": // QUIC, over UDP: served beside this listener by listeners/h3
		default:
			return p, fmt.Errorf("protocol %q is not served by this listener", n)
		}
	}
	switch {
	case p.tls && p.h2c:
		return p, errors.New("h2c is cleartext HTTP/2: a TLS listener serves h2")
	case !p.tls && p.h2:
		return p, errors.New("h2 needs tls (cleartext HTTP/2 is h2c)")
	case p.tls && !p.http1 && !p.h2:
		p.http1, p.h2 = true, true
	case !p.tls:
		p.http1 = true
	}
	return p, nil
}

// alpn lists the protocols a TLS listener offers, in preference order.
func (p protocolSet) alpn() []string {
	var out []string
	if p.h2 {
		out = append(out, "h2")
	}
	if p.http1 {
		out = append(out, "http/1.1")
	}
	return out
}

// Addr returns the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.eng.Addr() }

// Stats returns the engine's connection counts.
func (s *Server) Stats() engine.Stats { return s.eng.Stats() }

// FrontStats returns the TLS and PROXY protocol counts (zero on a
// listener without either).
func (s *Server) FrontStats() FrontStats {
	if s.front == nil {
		return FrontStats{}
	}
	st := &s.front.stats
	return FrontStats{
		Handshakes: st.handshakes.Load(), HandshakeFailures: st.handshakeFailures.Load(),
		PassedThrough: st.passedThrough.Load(), PassthroughFailures: st.passthroughFailures.Load(),
		ProxyRefused: st.proxyRefused.Load(), NotTLS: st.notTLS.Load(),
	}
}

// Update applies the live settings of cfg, the listener's block in a
// configuration being reloaded (conf.Live): read_header_timeout,
// write_timeout and idle_timeout hold from the next request or idle wait
// of every connection (HTTP/2: for connections opened after it), nodelay
// for connections accepted after it. The listener's other settings stay
// as they were bound; the router applies the live settings it reads.
func (s *Server) Update(cfg conf.Listener) error {
	s.h1.SetTimeouts(cfg.ReadHeaderTimeout, writeTimeout(cfg))
	s.eng.SetIdleTimeout(cfg.IdleTimeout)
	if err := s.eng.SetNoDelay(cfg.NoDelay); err != nil {
		return fmt.Errorf("listener %s: %w", s.name, err)
	}
	if s.front != nil {
		s.front.headerTO.Store(int64(cfg.ReadHeaderTimeout))
	}
	if s.h2 != nil {
		if err := s.h2.update(cfg); err != nil {
			return fmt.Errorf("listener %s: %w", s.name, err)
		}
	}
	return nil
}

// Serve accepts and serves connections until Shutdown, then returns nil.
func (s *Server) Serve() error {
	if err := s.eng.Serve(); err != nil {
		return fmt.Errorf("listener %s: %w", s.name, err)
	}
	return nil
}

// Shutdown stops accepting, closes idle connections, asks h2c
// connections to finish (GOAWAY) and waits for requests in flight and
// tunnels to finish. When ctx ends first, it closes every connection and
// returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.h2 != nil {
		s.h2.shutdown(ctx)
	}
	if err := s.eng.Shutdown(ctx); err != nil {
		return fmt.Errorf("listener %s: forced close: %w", s.name, err)
	}
	return nil
}
