// Package listeners holds edgeway's protocol front ends. This file's Server
// is the cleartext one: HTTP/1.1 and h2c (HTTP/2 with prior knowledge) on
// one port, served by Go's net/http, with an HTTP/1 framing guard in front
// of Go's parser so that requests two parsers could frame differently are
// refused (see internal/h1guard). The tradeoff: the guard inspects every
// inbound byte of HTTP/1 connections (about a nanosecond or two each, no
// allocation) and is stricter than Go in a few corners of chunked framing.
package listeners

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// Defaults applied by Listen to zero fields of a conf.Listener (conf.Load
// fills the same values; they matter for a Listener built by hand). Boolean
// fields are taken as given: a hand-built Listener with NoDelay false turns
// Nagle's algorithm on.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 32 << 10
)

// HTTP/2 limits; the header list limit is MaxHeaderBytes (Go derives it).
const (
	h2MaxConcurrentStreams = 250
	h2SendPingTimeout      = 30 * time.Second // ping a connection silent this long
	h2PingTimeout          = 15 * time.Second
	h2WriteByteTimeout     = 30 * time.Second // close a peer that stops reading
)

// Server is one cleartext listener: a bound socket and the HTTP server on
// it. Its methods are safe for concurrent use.
type Server struct {
	name    string
	log     *slog.Logger
	noDelay bool
	h2c     bool // the listener speaks h2c: the guard lets the preface through
	http    *http.Server
	ln      *listener

	shutting atomic.Bool
	mu       sync.Mutex
	hijacked map[*conn]struct{} // hijacked connections still open
}

// Listen binds cfg.Addr and prepares h to be served on it; Serve starts
// serving. Zero durations and sizes in cfg take the defaults above; an
// empty Protocols means "http1" and "h2c". A nil log uses slog.Default.
func Listen(cfg conf.Listener, h http.Handler, log *slog.Logger) (*Server, error) {
	cfg = withDefaults(cfg)
	protos, err := protocols(cfg.Protocols)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
	}
	if log == nil {
		log = slog.Default()
	}
	log = log.With("listener", cfg.Name)
	tcp, err := listenTCP(cfg)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", cfg.Name, err)
	}
	s := &Server{name: cfg.Name, log: log, noDelay: cfg.NoDelay, h2c: protos.UnencryptedHTTP2(), hijacked: make(map[*conn]struct{})}
	s.ln = newListener(tcp, cfg.MaxConns, s)
	s.http = &http.Server{
		Handler:           guardUpgrades(h),
		Protocols:         protos,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ConnState:         s.connState,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: h2MaxConcurrentStreams,
			SendPingTimeout:      h2SendPingTimeout,
			PingTimeout:          h2PingTimeout,
			WriteByteTimeout:     h2WriteByteTimeout,
		},
	}
	return s, nil
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

func protocols(names []string) (*http.Protocols, error) {
	p := new(http.Protocols)
	for _, n := range names {
		switch n {
		case "http1":
			p.SetHTTP1(true)
		case "h2c":
			p.SetUnencryptedHTTP2(true)
		default:
			return nil, fmt.Errorf("protocol %q is not served by a cleartext listener", n)
		}
	}
	return p, nil
}

// Addr returns the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts and serves connections until Shutdown, then returns nil.
func (s *Server) Serve() error {
	err := s.http.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) || s.shutting.Load() {
		return nil
	}
	return fmt.Errorf("listener %s: %w", s.name, err)
}

// Shutdown stops accepting, closes idle connections and waits for requests
// in flight and hijacked connections (tunnels) to finish. When ctx ends
// first, it closes every connection, hijacked ones included, and returns
// ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	s.ln.Close() // Serve may never have run
	err := s.http.Shutdown(ctx)
	if err == nil {
		err = s.waitHijacked(ctx)
	}
	if err == nil {
		return nil
	}
	s.http.Close()
	s.closeHijacked()
	return fmt.Errorf("listener %s: forced close: %w", s.name, err)
}

// connState follows connections through Go's server: it registers hijacked
// ones, and closes a connection that goes idle after an Upgrade or CONNECT
// request was answered without a hijack (the guard no longer parses it).
func (s *Server) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*conn)
	if !ok {
		return
	}
	switch st {
	case http.StateHijacked:
		c.hijacked.Store(true)
		s.mu.Lock()
		s.hijacked[c] = struct{}{}
		s.mu.Unlock()
		if c.closed.Load() {
			s.forget(c)
		}
	case http.StateIdle:
		if c.upgraded.Load() {
			c.Close()
		}
	}
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.hijacked, c)
	s.mu.Unlock()
}

func (s *Server) waitHijacked(ctx context.Context) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		n := len(s.hijacked)
		s.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (s *Server) closeHijacked() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.hijacked))
	for c := range s.hijacked {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}
