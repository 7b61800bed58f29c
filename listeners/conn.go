package listeners

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/listeners/internal/h1guard"
)

// Lingering close of a refused connection: read and drop what the client
// still sends for this long (or this much) after our half-close, so that
// the kernel does not answer it with a reset that can destroy the 400
// before the client reads it (RFC 9112 §9.6).
const (
	lingerTimeout = 250 * time.Millisecond
	lingerBytes   = 256 << 10
)

// listener accepts client connections, at most max at a time when max > 0:
// a slot is taken before Accept, so further clients wait in the kernel's
// backlog, and given back when the connection closes.
type listener struct {
	net.Listener
	srv       *Server
	slots     chan struct{} // nil: no limit
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

func newListener(ln net.Listener, max int, srv *Server) *listener {
	l := &listener{Listener: ln, srv: srv, done: make(chan struct{})}
	if max > 0 {
		l.slots = make(chan struct{}, max)
	}
	return l
}

// Accept waits for a free slot, then for a connection.
func (l *listener) Accept() (net.Conn, error) {
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: net.ErrClosed}
		}
	}
	nc, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok && !l.srv.noDelay {
		tc.SetNoDelay(false) // Go turns TCP_NODELAY on by default
	}
	c := &conn{Conn: nc, ln: l}
	c.guard.H2C = l.srv.h2c
	return c, nil
}

// Close stops Accept; later calls return nil.
func (l *listener) Close() error {
	l.closeOnce.Do(func() {
		close(l.done)
		l.closeErr = l.Listener.Close()
	})
	return l.closeErr
}

func (l *listener) release() {
	if l.slots != nil {
		<-l.slots
	}
}

// conn is one client connection: its reads go through the framing guard;
// closing it frees its slot and its place among hijacked connections.
type conn struct {
	net.Conn
	ln       *listener
	guard    h1guard.Guard // used by the reading goroutine only
	noted    bool          // the guard's leaving Guarding was handled
	upgraded atomic.Bool   // guard passes through after an Upgrade/CONNECT head
	poisoned atomic.Bool
	hijacked atomic.Bool
	closed   atomic.Bool
}

// Read reads through the framing guard.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.guard.Read(c.Conn, p)
	if !c.noted && c.guard.Mode() != h1guard.Guarding {
		c.noteMode()
	}
	return n, err
}

func (c *conn) noteMode() {
	c.noted = true
	switch c.guard.Mode() {
	case h1guard.Poisoned:
		c.poisoned.Store(true)
		c.ln.srv.log.Debug("refused request framing", "remote", c.RemoteAddr().String(), "err", c.guard.Err())
	case h1guard.PassThrough:
		c.upgraded.Store(c.guard.Upgraded())
	}
}

// CloseWrite half-closes the connection (Go's server uses it before a
// lingering close).
func (c *conn) CloseWrite() error {
	if tc, ok := c.Conn.(*net.TCPConn); ok {
		return tc.CloseWrite()
	}
	return nil
}

// ReadFrom lets response bodies use the socket's sendfile/splice path.
func (c *conn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(c.Conn, r)
}

// Close closes the connection once; a refused one lingers first.
func (c *conn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return &net.OpError{Op: "close", Net: "tcp", Err: net.ErrClosed}
	}
	if c.poisoned.Load() {
		c.linger()
	}
	err := c.Conn.Close()
	c.ln.release()
	if c.hijacked.Load() {
		c.ln.srv.forget(c)
	}
	return err
}

func (c *conn) linger() {
	tc, ok := c.Conn.(*net.TCPConn)
	if !ok || tc.CloseWrite() != nil {
		return
	}
	tc.SetReadDeadline(time.Now().Add(lingerTimeout))
	io.CopyN(io.Discard, tc, lingerBytes)
}
