package h3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Defaults of the zero values of Options.
const (
	DefaultIdleTimeout        = 30 * time.Second
	DefaultMaxIncomingStreams = 100
	DefaultRetryAbove         = 64
	DefaultMaxHeaderBytes     = 32 << 10
	handshakeTimeout          = 5 * time.Second
)

// Options configures a Server.
type Options struct {
	// Addr is the UDP address to listen on (host:port).
	Addr string
	// Handler serves every request. Required.
	Handler http.Handler
	// TLS holds the certificates (GetCertificate, GetConfigForClient or
	// Certificates). Listen uses a copy with NextProtos ["h3"]
	// (http3.ConfigureTLSConfig, which also applies it to the configs
	// GetConfigForClient returns); QUIC always runs TLS 1.3. Required.
	TLS *tls.Config
	// IdleTimeout closes a connection with no request in flight after
	// this long, whether the client stays silent (QUIC's idle timeout) or
	// only keeps it alive with PINGs (http3.Server.IdleTimeout). Zero:
	// DefaultIdleTimeout (30s).
	IdleTimeout time.Duration
	// MaxIncomingStreams caps the concurrent requests of one connection.
	// Zero: DefaultMaxIncomingStreams (100).
	MaxIncomingStreams int64
	// StreamWindow and ConnectionWindow are the largest flow-control
	// windows for one request body and for a connection's request
	// bodies together. Zero: quic-go's defaults (6 MiB and 15 MiB).
	StreamWindow, ConnectionWindow uint64
	// Allow0RTT accepts 0-RTT (early) data from resuming clients; requests
	// that arrive before the handshake completes are served only when
	// their method is safe (GET, HEAD, OPTIONS) and carry Early-Data: 1 to
	// the handler (RFC 8470 §5.1); any other method gets 425 Too Early.
	// Default false: no 0-RTT.
	Allow0RTT bool
	// RecvBuffer and SendBuffer are the UDP socket buffer sizes asked of
	// the kernel. Zero: what quic-go asks for (7 MiB). Listen reports in
	// Warnings when the kernel grants less.
	RecvBuffer, SendBuffer int
	// MaxConnsPerSource caps the connections of one client IP address
	// (handshakes included); further ones are refused (CONNECTION_REFUSED).
	// Zero: no limit.
	MaxConnsPerSource int
	// RetryAbove is the number of handshakes in flight above which a new
	// client must prove its address with a Retry round trip first. Zero:
	// DefaultRetryAbove (64); negative: always.
	RetryAbove int
	// MaxHeaderBytes caps a request's header section
	// (http3.Server.MaxHeaderBytes, announced as
	// SETTINGS_MAX_FIELD_SECTION_SIZE); larger requests get 431. Zero:
	// DefaultMaxHeaderBytes (32 KiB).
	//
	// There is no read-header timeout: quic-go's http3 reads the header
	// section with no deadline and offers no hook to set one. A request
	// stream that never completes its headers holds a goroutine until the
	// connection closes; MaxIncomingStreams and MaxConnsPerSource bound
	// how many one client can hold.
	MaxHeaderBytes int
	// Log receives connection errors. Nil: slog.Default().
	Log *slog.Logger
}

// Stats counts a server's connections and requests since Listen.
type Stats struct {
	Accepted         int64 // connections that reached the server
	Active           int64 // connections open now
	HandshakesOK     int64
	HandshakesFailed int64 // failed or timed out
	RefusedSource    int64 // refused by MaxConnsPerSource
	RetriesAsked     int64 // Initial packets answered with Retry
	Requests         int64 // requests that reached the handler
	EarlyRejected    int64 // unsafe requests in 0-RTT answered 425
}

// Server serves HTTP/3 on one UDP socket: its own QUIC accept side
// (Retry under load, per-source limits, counts) feeding quic-go's
// http3.Server.
type Server struct {
	o   Options
	pc  *net.UDPConn
	tr  *quic.Transport
	ln  *quic.EarlyListener
	h3  *http3.Server
	log *slog.Logger

	// Warnings lists what Listen could not set up as asked (socket
	// buffers the kernel capped), to be logged by the caller.
	Warnings []string

	handshaking atomic.Int64
	sources     sourceTable
	stats       struct {
		accepted, active, hsOK, hsFailed, refused, retries, requests, early atomic.Int64
	}
	closing atomic.Bool // Shutdown or Close has begun
}

// Listen binds the UDP socket and starts accepting QUIC handshakes;
// Serve hands the connections to HTTP/3.
func Listen(o Options) (*Server, error) {
	if o.Handler == nil || o.TLS == nil {
		return nil, errors.New("h3: a handler and a TLS config are required")
	}
	o = withDefaults(o)
	ua, err := net.ResolveUDPAddr("udp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("h3: resolving %s: %w", o.Addr, err)
	}
	pc, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("h3: %w", err)
	}
	s := &Server{o: o, pc: pc, log: o.Log}
	s.sources.init(o.MaxConnsPerSource)
	s.tr = &quic.Transport{Conn: pc, VerifySourceAddress: s.verifySource, ConnContext: s.connContext}
	s.ln, err = s.tr.ListenEarly(http3.ConfigureTLSConfig(o.TLS), s.quicConfig())
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("h3: %w", err)
	}
	s.h3 = &http3.Server{
		Handler:        &gate{s: s, next: o.Handler},
		MaxHeaderBytes: o.MaxHeaderBytes,
		IdleTimeout:    o.IdleTimeout,
		ConnContext:    connValues,
		// No Logger: http3 logs every request at debug level through it,
		// which costs an allocation per request even when debug is off.
		// Handler panics then go to slog.Default().
	}
	s.Warnings = setBuffers(pc, o.RecvBuffer, o.SendBuffer)
	return s, nil
}

func withDefaults(o Options) Options {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxIncomingStreams <= 0 {
		o.MaxIncomingStreams = DefaultMaxIncomingStreams
	}
	if o.RetryAbove == 0 {
		o.RetryAbove = DefaultRetryAbove
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o
}

func (s *Server) quicConfig() *quic.Config {
	c := &quic.Config{
		HandshakeIdleTimeout:  handshakeTimeout,
		MaxIdleTimeout:        s.o.IdleTimeout,
		MaxIncomingStreams:    s.o.MaxIncomingStreams,
		MaxIncomingUniStreams: 8, // control and two QPACK streams, and room for grease
		Allow0RTT:             s.o.Allow0RTT,
	}
	if w := s.o.StreamWindow; w > 0 {
		c.MaxStreamReceiveWindow = w
		c.InitialStreamReceiveWindow = min(w, 512<<10)
	}
	if w := s.o.ConnectionWindow; w > 0 {
		c.MaxConnectionReceiveWindow = w
		c.InitialConnectionReceiveWindow = min(w, 768<<10)
	}
	return c
}

// Addr is the UDP address the server listens on.
func (s *Server) Addr() net.Addr { return s.pc.LocalAddr() }

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Accepted: s.stats.accepted.Load(), Active: s.stats.active.Load(),
		HandshakesOK: s.stats.hsOK.Load(), HandshakesFailed: s.stats.hsFailed.Load(),
		RefusedSource: s.stats.refused.Load(), RetriesAsked: s.stats.retries.Load(),
		Requests: s.stats.requests.Load(), EarlyRejected: s.stats.early.Load(),
	}
}

// verifySource asks for a Retry while more handshakes than RetryAbove are
// in flight: spoofed Initials then cost the server a stateless packet,
// not a connection and a certificate signature.
func (s *Server) verifySource(net.Addr) bool {
	if s.o.RetryAbove < 0 || s.handshaking.Load() >= int64(s.o.RetryAbove) {
		s.stats.retries.Add(1)
		return true
	}
	return false
}

// Serve serves HTTP/3 on the accepted connections until Shutdown or
// Close; it returns nil then, or the error that stopped it.
func (s *Server) Serve() error {
	err := s.h3.ServeListener(listener{s})
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, quic.ErrServerClosed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("h3: serving: %w", err)
	}
	return nil
}

// Shutdown stops accepting connections and closes the server gracefully
// (http3.Server.Shutdown): every connection gets GOAWAY (RFC 9114 §5.2)
// naming the first request it will not serve; requests in flight finish,
// and the client closes the connection once they are done. When ctx ends
// first, the remaining connections are closed at once (CONNECTION_CLOSE
// with H3_NO_ERROR) and ctx's error returned. The socket is closed last.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.ln.Close()
	err := s.h3.Shutdown(ctx)
	if cerr := s.closeTransport(); err == nil {
		err = cerr
	}
	return err
}

// Close closes every connection at once, and the socket.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.ln.Close()
	err := s.h3.Close()
	if cerr := s.closeTransport(); err == nil {
		err = cerr
	}
	return err
}

// closeTransport closes connections still in the handshake or never
// served, then the socket (quic.Transport leaves a socket it was given
// open).
func (s *Server) closeTransport() error {
	err := s.tr.Close()
	if cerr := s.pc.Close(); err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("h3: closing: %w", err)
	}
	return nil
}
