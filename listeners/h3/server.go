package h3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// Defaults of the zero values of Options.
const (
	DefaultIdleTimeout        = 30 * time.Second
	DefaultMaxIncomingStreams = 100
	DefaultRetryAbove         = 64
	DefaultMaxHeaderBytes     = 32 << 10
	DefaultReadHeaderTimeout  = 10 * time.Second
	handshakeTimeout          = 5 * time.Second
)

// Options configures a Server.
type Options struct {
	// Addr is the UDP address to listen on (host:port).
	Addr string
	// Handler serves every request. Required.
	Handler http.Handler
	// TLS holds the certificates (GetCertificate or Certificates);
	// Listen clones it and sets NextProtos to ["h3"] and MinVersion to
	// TLS 1.3, as QUIC requires. Required.
	TLS *tls.Config
	// IdleTimeout closes a connection with nothing in flight after this
	// long. Zero: DefaultIdleTimeout (30s).
	IdleTimeout time.Duration
	// MaxIncomingStreams caps the concurrent requests of one connection.
	// Zero: DefaultMaxIncomingStreams (100).
	MaxIncomingStreams int64
	// StreamWindow and ConnectionWindow are the largest flow-control
	// windows for one request body and for a connection's request
	// bodies together. Zero: quic-go's defaults (6 MiB and 15 MiB).
	StreamWindow, ConnectionWindow uint64
	// Allow0RTT accepts 0-RTT (early) data from resuming clients; requests
	// that arrive in it are served only when their method is safe (GET,
	// HEAD, OPTIONS), carry Early-Data: 1 to the handler (RFC 8470), and
	// any other method gets 425 Too Early. Default false: no 0-RTT.
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
	// MaxHeaderBytes caps a request's header section, as
	// SETTINGS_MAX_FIELD_SECTION_SIZE counts it; larger requests get 431.
	// Zero: DefaultMaxHeaderBytes (32 KiB).
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the time between a request stream's
	// opening and the end of its header section. Zero:
	// DefaultReadHeaderTimeout (10s).
	ReadHeaderTimeout time.Duration
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
	Requests         int64
	EarlyRejected    int64 // unsafe requests in 0-RTT answered 425
}

// Server serves HTTP/3 on one UDP socket.
type Server struct {
	o   Options
	pc  *net.UDPConn
	tr  *quic.Transport
	ln  *quic.EarlyListener
	log *slog.Logger

	// Warnings lists what Listen could not set up as asked (socket
	// buffers the kernel capped), to be logged by the caller.
	Warnings []string

	handshaking atomic.Int64
	sources     sourceTable
	stats       struct {
		accepted, active, hsOK, hsFailed, refused, retries, requests, early atomic.Int64
	}

	mu       sync.Mutex
	conns    map[*serverConn]struct{}
	closing  bool
	connsWG  sync.WaitGroup
	serveErr chan error
}

// Listen binds the UDP socket and starts accepting QUIC connections;
// Serve runs the accept loop.
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
	s := &Server{o: o, pc: pc, log: o.Log, conns: map[*serverConn]struct{}{}}
	s.sources.init(o.MaxConnsPerSource)
	s.tr = &quic.Transport{Conn: pc, VerifySourceAddress: s.verifySource, ConnContext: s.connContext}
	tc := o.TLS.Clone()
	tc.NextProtos = []string{"h3"}
	tc.MinVersion = tls.VersionTLS13
	s.ln, err = s.tr.ListenEarly(tc, s.quicConfig())
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("h3: %w", err)
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
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
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

// Serve accepts connections until Shutdown or Close; it returns nil
// then, or the error that stopped it.
func (s *Server) Serve() error {
	for {
		c, err := s.ln.Accept(context.Background())
		if err != nil {
			if errors.Is(err, quic.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("h3: accepting: %w", err)
		}
		sc := newServerConn(s, c)
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.CloseWithError(quic.ApplicationErrorCode(ErrNoError), "shutting down")
			continue
		}
		s.conns[sc] = struct{}{}
		s.connsWG.Add(1)
		s.mu.Unlock()
		go sc.serve()
	}
}

func (s *Server) forget(sc *serverConn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
	s.connsWG.Done()
}

// Shutdown stops accepting connections, sends every connection GOAWAY,
// lets in-flight requests finish and closes each connection once it has
// none (CONNECTION_CLOSE with H3_NO_ERROR). When ctx ends first, the
// remaining connections are closed at once and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	s.ln.Close()
	for _, c := range conns {
		c.goAway()
	}
	done := make(chan struct{})
	go func() { s.connsWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.closeConns(ErrNoError, "shutdown grace over")
		<-done
	}
	s.tr.Close()
	return err
}

// Close closes every connection at once and the socket.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.ln.Close()
	s.closeConns(ErrNoError, "server closed")
	s.connsWG.Wait()
	return s.tr.Close()
}

func (s *Server) closeConns(code ErrCode, msg string) {
	s.mu.Lock()
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.conn.CloseWithError(quic.ApplicationErrorCode(code), msg)
	}
}
