package httpclient

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// coalesceLimit is how many bytes a connection's Writes may queue before
// the next one waits for the writer to take them: the memory one upstream
// HTTP/2 connection holds for writes is at most about twice this plus a
// frame, and an idle one keeps its two buffers only up to keepBufBytes.
const (
	coalesceLimit = 64 << 10
	keepBufBytes  = 16 << 10
)

// closeFlushTimeout bounds how long Close waits for queued bytes to reach
// a server that does not read them.
const closeFlushTimeout = time.Second

var errCoalescedClosed = errors.New("httpclient: write on a closed HTTP/2 connection")

// coalescedConn is the net.Conn an upstream HTTP/2 connection
// (golang.org/x/net/http2's ClientConn) writes to: a Write only queues
// the bytes, and one writer goroutine per connection sends everything
// queued in one write(2). x/net flushes after every frame a stream writes
// (a gRPC unary call's HEADERS, its DATA and the empty DATA that ends it
// are three flushes, three syscalls, from the stream's own goroutine);
// here the frames written while the writer waits to run, by that stream
// and by the connection's others, go out together. On a loopback
// upstream each write(2) also pays for the receiver's delivery, which
// made these flushes 40% of edgeway's CPU per call (make bench-grpc,
// PROFILE=1).
//
// A write error is sticky: it is returned by every later Write, and it
// closes the connection so that x/net's read loop ends and fails the
// streams. Reads, deadlines and addresses are the connection's own.
type coalescedConn struct {
	net.Conn

	mu      sync.Mutex
	wake    sync.Cond // the writer: bytes queued or closing; Writes: room made
	queued  []byte
	spare   []byte // the buffer the writer hands back
	err     error  // the first write error
	closing bool
	done    chan struct{} // closed once the writer closed the connection
}

// coalesce wraps nc and starts its writer; Close stops it. A TLS
// connection keeps its ConnectionState (x/net reads it).
func coalesce(nc net.Conn) net.Conn {
	c := &coalescedConn{Conn: nc, done: make(chan struct{})}
	c.wake.L = &c.mu
	panics.Go("upstream h2 writer", c.writer)
	if tc, ok := nc.(*tls.Conn); ok {
		return &coalescedTLSConn{coalescedConn: c, tc: tc}
	}
	return c
}

// Write queues p (copied) for the writer; it waits only while
// coalesceLimit bytes are already queued.
func (c *coalescedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && !c.closing && len(c.queued) >= coalesceLimit {
		c.wake.Wait()
	}
	switch {
	case c.err != nil:
		return 0, c.err
	case c.closing:
		return 0, errCoalescedClosed
	}
	if len(c.queued) == 0 {
		c.wake.Broadcast()
	}
	c.queued = append(c.queued, p...)
	return len(p), nil
}

// writer sends what is queued until Close, then closes the connection.
func (c *coalescedConn) writer() {
	defer close(c.done)
	defer c.Conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for len(c.queued) == 0 && !c.closing {
			c.wake.Wait()
		}
		if len(c.queued) == 0 {
			return // closing, everything sent
		}
		out := c.queued
		c.queued, c.spare = c.spare[:0], nil
		c.wake.Broadcast() // room for waiting Writes
		c.mu.Unlock()
		_, err := c.Conn.Write(out)
		c.mu.Lock()
		if cap(out) <= keepBufBytes {
			c.spare = out[:0]
		}
		if err != nil {
			c.err = err
			c.queued = nil
			c.wake.Broadcast()
			return
		}
	}
}

// Close sends what is queued (for at most closeFlushTimeout) and closes
// the connection; later Writes fail.
func (c *coalescedConn) Close() error {
	c.mu.Lock()
	first := !c.closing
	c.closing = true
	c.wake.Broadcast()
	c.mu.Unlock()
	if first {
		// Bounds the queued bytes' write. A TLS close_notify sets a
		// deadline of its own (5 s), so over TLS the socket itself is
		// closed once closeFlushTimeout has passed.
		_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
		if tc, ok := c.Conn.(*tls.Conn); ok {
			t := time.AfterFunc(closeFlushTimeout, func() { tc.NetConn().Close() })
			defer t.Stop()
		}
	}
	<-c.done
	return nil
}

// coalescedTLSConn is a coalescedConn over TLS.
type coalescedTLSConn struct {
	*coalescedConn
	tc *tls.Conn
}

// ConnectionState is the TLS connection's.
func (c *coalescedTLSConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }
