package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// Action is what a Handler wants done with its connection after Serve.
type Action int

// The actions a Handler can return.
const (
	// Park waits on the loop, holding no goroutine and no buffer, until the
	// connection is readable again. The handler must have nothing
	// buffered that it has not answered.
	Park Action = iota
	// Close closes the connection.
	Close
	// Detach hands the connection over to the handler (an HTTP/2 server's
	// ServeConn, say): the engine forgets it, but it counts against
	// MaxConns, and Shutdown waits for it, until Conn.Close is called.
	Detach
)

// Handler is a protocol front end (HTTP/1, later TLS).
type Handler interface {
	// Serve is called on its own goroutine each time a parked connection
	// becomes readable or reports hang-up or an error. It reads with
	// c.Read (blocking, deadlines allowed), handles as many requests as
	// it likes and returns what to do next. A panic closes the connection.
	//
	// A readiness report can be stale, as with any poller: an event the
	// loop collected before the handler's last read, handed over after it
	// parked, dispatches a connection with nothing to read. A handler
	// therefore takes its first bytes without waiting (Conn.TryRead, or
	// a read under a deadline in the past over TLS) and parks again when
	// there are none.
	Serve(c *Conn) Action
}

// Stats counts an engine's connections.
type Stats struct {
	Open     int // accepted and not yet closed, in any state
	Parked   int // waiting on a loop for bytes; no goroutine held
	Held     int // of Parked, those with a request begun (Conn.Hold)
	Active   int // in a Handler.Serve call
	Tunnels  int // tunnels (each a client and an upstream connection)
	Detached int // taken over by a handler, not yet closed
}

// Engine accepts the connections of one listener and owns them until
// they close.
type Engine struct {
	cfg   Config
	h     Handler
	log   *slog.Logger
	lns   []*net.TCPListener
	accs  []*acceptor // the engine's accept4 on each of lns; nil with GoPoller
	loops []*loop
	next  atomic.Uint32 // round-robin loop choice
	sem   chan struct{} // MaxConns slots; nil: no limit
	epoch time.Time     // parked times count from here

	open, parked, held, active, tunnels, detached atomic.Int64

	// idle and noDelay are cfg's IdleTimeout and NoDelay as set last
	// (SetIdleTimeout, SetNoDelay): a reload changes them while serving.
	idle    atomic.Int64
	noDelay atomic.Bool

	mu       sync.Mutex // guards served and the start of the goroutines
	served   bool
	shutting atomic.Bool
	done     chan struct{} // closed when shutdown begins
	zero     chan struct{} // closed when no connection is left after done
	zeroOnce sync.Once
	stopOnce sync.Once
	stopped  chan struct{} // closed when the loops have ended
	accepts  sync.WaitGroup
	loopsWG  sync.WaitGroup
	errOnce  sync.Once
	err      error // a loop's fatal error, returned by Serve
}

// Listen binds cfg.Addr now (so that the caller learns of a port in use at
// once) and prepares the loops; Serve starts accepting.
func Listen(cfg Config, h Handler, log *slog.Logger) (*Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{cfg: cfg, h: h, log: log, epoch: time.Now(),
		done: make(chan struct{}), zero: make(chan struct{}), stopped: make(chan struct{})}
	e.SetIdleTimeout(cfg.IdleTimeout)
	if cfg.MaxConns > 0 {
		e.sem = make(chan struct{}, cfg.MaxConns)
	}
	lns, err := listenAll(&cfg)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.lns = lns
	if !cfg.GoPoller {
		for _, ln := range lns {
			a, err := newAcceptor(e, ln)
			if err != nil {
				e.closeEarly()
				return nil, fmt.Errorf("engine: %w", err)
			}
			e.accs = append(e.accs, a)
		}
	}
	if err := e.SetNoDelay(cfg.NoDelay); err != nil {
		e.closeEarly()
		return nil, fmt.Errorf("engine: %w", err)
	}
	for range cfg.loops() {
		l, err := newLoop(e)
		if err != nil {
			e.closeEarly()
			return nil, fmt.Errorf("engine: %w", err)
		}
		e.loops = append(e.loops, l)
	}
	return e, nil
}

// SetIdleTimeout replaces Config.IdleTimeout: parked connections are
// held to it from the next sweep on (0: never closed for idleness).
func (e *Engine) SetIdleTimeout(d time.Duration) { e.idle.Store(int64(max(d, 0))) }

// SetNoDelay replaces Config.NoDelay for the connections accepted after
// it: the engine's own sockets inherit it from the listening sockets.
func (e *Engine) SetNoDelay(on bool) error {
	e.noDelay.Store(on)
	if e.cfg.GoPoller {
		return nil // set on each accepted *net.TCPConn (adopt)
	}
	for _, ln := range e.lns {
		if err := setNoDelay(ln, on); err != nil {
			return err
		}
	}
	return nil
}

func (e *Engine) idleTimeout() time.Duration { return time.Duration(e.idle.Load()) }

func (e *Engine) closeEarly() {
	e.closeListeners()
	for _, l := range e.loops {
		l.stop()
	}
}

// closeListeners closes the listening sockets, which ends the accept
// loops.
func (e *Engine) closeListeners() {
	for _, ln := range e.lns {
		ln.Close()
	}
	for _, a := range e.accs {
		a.close()
	}
}

// Addr is the address listened on (with the port chosen for port 0).
func (e *Engine) Addr() net.Addr { return e.lns[0].Addr() }

// Serve runs the accept loops and the epoll loops until Shutdown or Close
// and returns when the loops have ended: nil, or the error that stopped a
// loop. Serve may be called once.
func (e *Engine) Serve() error {
	e.mu.Lock()
	if e.served {
		e.mu.Unlock()
		return errors.New("engine: Serve called twice")
	}
	e.served = true
	if !e.shutting.Load() {
		for _, l := range e.loops {
			l.start()
		}
		for i, ln := range e.lns {
			var a *acceptor
			if e.accs != nil {
				a = e.accs[i]
			}
			e.accepts.Add(1)
			go e.acceptLoop(ln, a)
		}
	}
	e.mu.Unlock()
	<-e.stopped
	return e.err
}

// Shutting reports whether Shutdown or Close has begun; handlers use it
// to answer "Connection: close".
func (e *Engine) Shutting() bool { return e.shutting.Load() }

// Stats returns the current counts.
func (e *Engine) Stats() Stats {
	return Stats{
		Open:     int(e.open.Load()),
		Parked:   int(e.parked.Load()),
		Held:     int(e.held.Load()),
		Active:   int(e.active.Load()),
		Tunnels:  int(e.tunnels.Load()),
		Detached: int(e.detached.Load()),
	}
}

// Shutdown stops accepting, closes parked connections at once and closes
// each connection being served when its Serve returns. It then waits for
// served, detached and tunnelled connections to close. If ctx ends first,
// it closes every connection and returns an error wrapping ctx.Err().
func (e *Engine) Shutdown(ctx context.Context) error {
	e.begin()
	select {
	case <-e.zero:
		e.stop()
		return nil
	case <-ctx.Done():
		st := e.Stats()
		e.force()
		e.stop()
		return fmt.Errorf("engine: shutdown forced, %d connections closed (%d serving a request, %d tunnels, %d taken over such as HTTP/2): %w",
			st.Open, st.Active, st.Tunnels, st.Detached, ctx.Err())
	}
}

// Close closes the listeners and every connection at once.
func (e *Engine) Close() error {
	e.begin()
	e.force()
	e.stop()
	return nil
}

// begin stops accepting and closes the parked connections.
func (e *Engine) begin() {
	e.mu.Lock()
	if !e.shutting.Swap(true) {
		close(e.done)
		e.closeListeners()
	}
	e.mu.Unlock()
	e.accepts.Wait() // no connection is adopted after this
	for _, l := range e.loops {
		for _, c := range l.claimIdle() {
			c.Close()
		}
	}
	if e.open.Load() == 0 {
		e.zeroOnce.Do(func() { close(e.zero) })
	}
}

// force closes every connection the loops know of.
func (e *Engine) force() {
	for _, l := range e.loops {
		for _, o := range l.all() {
			o.close()
		}
	}
}

// stop ends the loops once no connection needs them.
func (e *Engine) stop() {
	e.stopOnce.Do(func() {
		for _, l := range e.loops {
			l.stop()
		}
		e.loopsWG.Wait()
		close(e.stopped)
	})
}

// fail records a loop's fatal error and closes the engine.
func (e *Engine) fail(err error) {
	e.errOnce.Do(func() { e.err = fmt.Errorf("engine: %w", err) })
	e.log.Error("event loop failed; closing the listener", "addr", e.Addr().String(), "err", err)
	panics.Go("engine close", func() { e.Close() })
}

// released is called once per closed connection.
func (e *Engine) released() {
	if e.sem != nil {
		<-e.sem
	}
	if e.open.Add(-1) == 0 && e.shutting.Load() {
		e.zeroOnce.Do(func() { close(e.zero) })
	}
}

// now is the time on the engine's monotonic clock.
func (e *Engine) now() time.Duration { return time.Since(e.epoch) }
