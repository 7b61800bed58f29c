// Package listeners holds edgeway's protocol front ends. Server is the
// cleartext one: HTTP/1.1 and h2c (HTTP/2 with prior knowledge) on one
// port. The connection engine (listeners/engine) owns the sockets: an idle
// keep-alive connection is parked on its epoll loop and holds no goroutine
// and no buffer; when bytes arrive, the HTTP/1 server (listeners/http1)
// parses the request in place and hands edgeway's own request type to the
// router. A connection that opens with the HTTP/2 preface is handed to
// golang.org/x/net/http2, whose requests reach the same router through
// the net/http adapter (internal/httpmsg/stdhttp). The tradeoff: an h2c
// connection keeps its goroutines (x/net/http2 is goroutine-bound), so
// only HTTP/1 connections get the parked cost.
package listeners

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/listeners/engine"
	"github.com/edgeway/edgeway/listeners/http1"
)

// Defaults applied by Listen to zero fields of a conf.Listener (conf.Load
// fills the same values; they matter for a Listener built by hand).
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 32 << 10
)

// Server is one cleartext listener. Its methods are safe for concurrent
// use.
type Server struct {
	name string
	eng  *engine.Engine
	h1   *http1.Server
	h2   *h2Front // nil when the listener serves no HTTP/2
}

// Listen binds cfg.Addr and prepares h to be served on it; Serve starts
// serving. Zero durations and sizes in cfg take the defaults above; an
// empty Protocols means "http1" and "h2c". A nil log uses slog.Default.
func Listen(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger) (*Server, error) {
	cfg = withDefaults(cfg)
	h2c, err := servesH2C(cfg.Protocols)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("listener", cfg.Name)
	s := &Server{name: cfg.Name}
	hc := http1.Config{
		Name: cfg.Name, Handler: h, ReadHeaderTimeout: cfg.ReadHeaderTimeout, WriteTimeout: writeTimeout(cfg),
		MaxHeaderBytes: cfg.MaxHeaderBytes, Log: log,
		Shutting: func() bool { return s.eng != nil && s.eng.Shutting() },
	}
	if h2c {
		f, err := newH2Front(cfg, h, log)
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
		}
		s.h2 = f
		hc.H2C = f.serve
	}
	s.h1 = http1.New(hc)
	eng, err := engine.Listen(engine.ConfigFrom(cfg), s.h1, log)
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

func withDefaults(cfg conf.Listener) conf.Listener {
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if len(cfg.Protocols) == 0 {
		cfg.Protocols = []string{"http1", "h2c"}
	}
	return cfg
}

// servesH2C checks the protocol names and reports whether h2c is on.
// HTTP/1 is always served: the engine's first protocol.
func servesH2C(names []string) (bool, error) {
	h2c := false
	for _, n := range names {
		switch n {
		case "http1":
		case "h2c":
			h2c = true
		default:
			return false, fmt.Errorf("protocol %q is not served by a cleartext listener", n)
		}
	}
	return h2c, nil
}

// Addr returns the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.eng.Addr() }

// Stats returns the engine's connection counts.
func (s *Server) Stats() engine.Stats { return s.eng.Stats() }

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
