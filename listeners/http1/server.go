package http1

import (
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/listeners/engine"
)

// Defaults for zero fields of Config.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultMaxHeaderBytes    = 32 << 10
	DefaultWriteTimeout      = 60 * time.Second
)

// Buffer sizes and limits.
const (
	smallBuf = 4 << 10 // read and write buffers taken per active connection
	// headSlack is read beyond MaxHeaderBytes before a head is refused with
	// 431, as Go's server allows (so that the limit counts fields, not the
	// bytes of the read that crossed it).
	headSlack = 4 << 10
	// maxDrain is how much of a body the handler left unread is read and
	// dropped to keep the connection; a longer rest closes it (net/http's
	// maxPostHandlerReadBytes).
	maxDrain = 256 << 10
	// Lingering close of a refused connection: read and drop what the
	// client still sends for this long (or this much) after our
	// half-close, so that the kernel does not answer it with a reset that
	// can destroy the error response before the client reads it (RFC 9112
	// §9.6).
	lingerTimeout = 250 * time.Millisecond
	lingerBytes   = 256 << 10
)

// Config configures a Server.
type Config struct {
	// Name is the listener's name, added to log records.
	Name string
	// Handler serves every HTTP/1 request (the router). Required.
	Handler httpmsg.Handler
	// ReadHeaderTimeout bounds the time from the first byte of a request
	// to the end of its head; a slower client is disconnected without an
	// answer. Zero means DefaultReadHeaderTimeout. The idle time between
	// requests is the engine's (engine.Config), not this server's.
	ReadHeaderTimeout time.Duration
	// MaxHeaderBytes caps the request line plus fields; a larger head is
	// answered 431 (up to 4 KiB of slack is read first). Zero means
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// H2C, when non-nil, turns on HTTP/2 with prior knowledge on the
	// port: a connection that starts with the HTTP/2 preface is handed to
	// H2C on a goroutine of its own, with the bytes already read (preface
	// included) yielded first by c's Read. H2C serves the connection until
	// it ends; c is closed when it returns, and Close on c frees its
	// engine slot. Nil: the preface is refused like any malformed request
	// (400).
	H2C func(c net.Conn)
	// H2CEngine, when non-nil, is H2C for an HTTP/2 server that runs on
	// the engine itself: it is called on the dispatch goroutine with the
	// bytes already read (preface included; it copies them) and its
	// answer is Serve's. It sets c.Conn to a stream of its own, so that
	// Resume recognises the connection's later dispatches. It takes
	// precedence over H2C.
	H2CEngine func(c *engine.Conn, pre []byte) engine.Action
	// Resume, when non-nil, is offered every dispatch of a connection
	// whose stream a handler replaced (c.Fresh is false) before it is
	// served as HTTP/1: ok reports that it served it (an h2c connection
	// that H2CEngine parked).
	Resume func(c *engine.Conn) (a engine.Action, ok bool)
	// WriteTimeout cuts off a client that does not take the bytes of a
	// response write for this long (nginx's send_timeout). Zero means
	// DefaultWriteTimeout; negative, no limit. A write the socket takes
	// at once, the usual case, sets no timer.
	WriteTimeout time.Duration
	// Shutting reports whether the server is shutting down (the engine's
	// Shutting): responses then carry "Connection: close" and the
	// connection closes after them. Nil means never.
	Shutting func() bool
	// Log receives handler panics and refused requests (at Debug). Nil
	// uses slog.Default.
	Log *slog.Logger
	// Refused, when set, is told of each request refused before the
	// handler (its Listener is Name); it runs on the connection's
	// goroutine, so it must be quick (count, log).
	Refused func(httpmsg.Refusal)
}

// Server serves HTTP/1.0 and HTTP/1.1 (and hands h2c over) on connections
// of a connection engine. It is an engine.Handler. Its methods are safe for
// concurrent use.
type Server struct {
	cfg Config
	// readHeader and write are cfg's ReadHeaderTimeout and WriteTimeout,
	// as SetTimeouts last set them: read per request, so that a reload
	// applies to the next request of every connection.
	readHeader, write atomic.Int64
	log               *slog.Logger
	limits            http1.Limits
	bigSize           int       // capacity of a read buffer grown for a large head
	big               sync.Pool // read buffers of bigSize
	exchange          sync.Pool // *exchange
}

// New returns a Server for cfg. It panics when cfg.Handler is nil.
func New(cfg Config) *Server {
	if cfg.Handler == nil {
		panic("http1: nil Handler")
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	if cfg.Name != "" {
		log = log.With("listener", cfg.Name)
	}
	s := &Server{cfg: cfg, log: log, bigSize: max(cfg.MaxHeaderBytes+headSlack, 2*smallBuf),
		limits: http1.Limits{MaxHeaderBytes: cfg.MaxHeaderBytes}}
	s.exchange.New = func() any { return newExchange(s) }
	s.SetTimeouts(cfg.ReadHeaderTimeout, cfg.WriteTimeout)
	return s
}

// SetTimeouts replaces Config's ReadHeaderTimeout and WriteTimeout for the
// requests that start after it (zero keeps a value as it is; a negative
// write timeout means no limit). It is how a reload applies them.
func (s *Server) SetTimeouts(readHeader, write time.Duration) {
	if readHeader > 0 {
		s.readHeader.Store(int64(readHeader))
	}
	if write != 0 {
		s.write.Store(int64(write))
	}
}

// readHeaderTimeout and writeTimeout are the timeouts now in force.
func (s *Server) readHeaderTimeout() time.Duration { return time.Duration(s.readHeader.Load()) }
func (s *Server) writeTimeout() time.Duration      { return time.Duration(s.write.Load()) }

// Serve serves the requests a readable connection carries: those already
// sent, in order, then parks it (holding nothing), or closes it, or hands
// it to a tunnel or to H2C.
func (s *Server) Serve(c *engine.Conn) engine.Action {
	if s.cfg.Resume != nil && !c.Fresh() {
		if a, ok := s.cfg.Resume(c); ok {
			return a
		}
	}
	x := s.exchange.Get().(*exchange)
	act := x.serveConn(c)
	x.release()
	// Lifetime: the handler has returned for every request served, and
	// the router joins the goroutines that read a request body before it
	// returns, so nothing views the exchange's buffers any more.
	s.exchange.Put(x)
	return act
}

func (s *Server) shutting() bool { return s.cfg.Shutting != nil && s.cfg.Shutting() }

// getBig returns a read buffer of bigSize.
func (s *Server) getBig() []byte {
	if b, ok := s.big.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, s.bigSize)
}

func (s *Server) putBig(b []byte) {
	if cap(b) == s.bigSize {
		b = b[:cap(b)]
		s.big.Put(&b)
	}
}

var _ engine.Handler = (*Server)(nil)
