package h2conn

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// Config is one HTTP/2 server's settings. Zero values take the defaults
// noted.
type Config struct {
	// Handler serves every request. Required.
	Handler httpmsg.Handler
	// MaxConcurrentStreams is SETTINGS_MAX_CONCURRENT_STREAMS; a stream
	// past it is refused (RST_STREAM REFUSED_STREAM). Default 250.
	MaxConcurrentStreams int
	// MaxFrameSize is the SETTINGS_MAX_FRAME_SIZE advertised; a larger
	// frame ends the connection (FRAME_SIZE_ERROR). Default 16384.
	MaxFrameSize int
	// MaxHeaderBytes caps a request's header list as RFC 9113 §6.5.2
	// counts it: a larger one is answered 431 on its stream; one over
	// HardHeaderFactor times this ends the connection
	// (ENHANCE_YOUR_CALM). Default 32 KiB.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds how long a header block (HEADERS and its
	// CONTINUATION frames) may stay open. Zero: no bound.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a connection (GOAWAY) with no open stream for
	// this long. Zero: never.
	IdleTimeout time.Duration
	// StallTimeout resets a stream whose response gets no flow-control
	// window, or whose request body gets no byte, for this long. Zero:
	// no bound.
	StallTimeout time.Duration
	// WriteTimeout closes a connection whose peer takes none of a write
	// for this long. Default 30s.
	WriteTimeout time.Duration
	// MaxControlPerSecond caps the SETTINGS, PING, RST_STREAM, PRIORITY
	// frames, empty DATA frames, tiny WINDOW_UPDATEs and frames of
	// unknown type a client may send in a second; past it the connection
	// ends (ENHANCE_YOUR_CALM). Default 1000.
	MaxControlPerSecond int
	// Listener names the listener in refusals.
	Listener string
	// Refused, when set, is told of every request, stream or connection
	// the server refused for the client's fault; it runs on the
	// connection's goroutine and must be quick.
	Refused func(httpmsg.Refusal)
	// Log receives what is not the client's fault. Nil: slog.Default.
	Log *slog.Logger
}

// HardHeaderFactor times MaxHeaderBytes is the header list past which a
// connection ends rather than a stream being answered 431.
const HardHeaderFactor = 4

// Flow-control windows this server gives its clients: the per-stream
// window bounds the request body bytes a stream buffers, the connection
// window all streams' together.
const (
	streamWindow = 256 << 10
	connWindow   = 1 << 20
)

// maxOut bounds the frames waiting for the writer: a stream's DATA waits
// past it (control frames do not; the control frame limit bounds them).
const maxOut = 256 << 10

func (c Config) withDefaults() Config {
	if c.MaxConcurrentStreams <= 0 {
		c.MaxConcurrentStreams = 250
	}
	if c.MaxFrameSize < defaultFrameSize {
		c.MaxFrameSize = defaultFrameSize
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 32 << 10
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.MaxControlPerSecond <= 0 {
		c.MaxControlPerSecond = 1000
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// Server serves HTTP/2 connections. Its methods are safe for concurrent
// use.
type Server struct {
	cfg      Config
	shutting atomic.Bool
	mu       sync.Mutex
	conns    map[*conn]struct{}
	gone     *sync.Cond    // signalled when a connection ends
	work     chan *stream  // idle workers take streams from it
	quit     chan struct{} // closed by Shutdown: idle workers end
	quitOnce sync.Once
	idle     idleList // parked connections, for their idle timeout
}

// New returns a server with cfg, defaults filled in.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg.withDefaults(), conns: map[*conn]struct{}{}, work: make(chan *stream), quit: make(chan struct{})}
	s.gone = sync.NewCond(&s.mu)
	s.idle.s = s
	return s
}

// ServeConn serves one connection whose next bytes are the client's
// connection preface (h2c with prior knowledge, or TLS after ALPN chose
// h2), until it ends; it closes nc.
func (s *Server) ServeConn(nc net.Conn) {
	c := newConn(s, nc)
	s.add(c)
	defer s.drop(c)
	defer func() {
		if v := recover(); v != nil {
			// the connection ends, its streams and writer with it; the
			// caller's recover reports the panic
			c.abortStreams()
			c.closeNow()
			panic(v)
		}
	}()
	c.serve()
}

// add and drop count a connection in and out of the server's, from its
// start to its end (parked in between, for ServeEngine's).
func (s *Server) add(c *conn) {
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
}

func (s *Server) drop(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.gone.Broadcast()
	s.mu.Unlock()
}

// Shutdown sends GOAWAY on every connection, parked ones included, and
// on those that start after it; each closes once its streams are done. When ctx ends first,
// the connections left are closed and ctx's error returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutting.Store(true)
	defer s.quitOnce.Do(func() { close(s.quit) })
	s.mu.Lock()
	for c := range s.conns {
		c.goAwayGraceful()
	}
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.gone.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.conns) > 0 {
		if ctx.Err() != nil {
			for c := range s.conns {
				c.nc.Close()
				if c.ec != nil {
					c.ec.Close()
				}
			}
			return ctx.Err()
		}
		s.gone.Wait()
	}
	return nil
}

// workerIdle is how long a handler goroutine waits for the next stream
// before it ends.
const workerIdle = 2 * time.Second

// dispatch runs st's handler on an idle worker goroutine, or a new one
// when none is waiting: a goroutine per stream, without the cost of
// starting one for each.
func (s *Server) dispatch(st *stream) {
	select {
	case s.work <- st:
	default:
		go s.worker(st)
	}
}

// worker runs handlers until none comes for workerIdle.
func (s *Server) worker(st *stream) {
	defer panics.Recover("h2 worker")
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		st.run()
		t.Reset(workerIdle)
		select {
		case st = <-s.work:
		case <-t.C:
			return
		case <-s.quit:
			return
		}
	}
}
