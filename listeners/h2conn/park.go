package h2conn

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/listeners/engine"
)

// ServeEngine serves an HTTP/2 connection of the connection engine (its
// first dispatch): nc is c's stream about to carry the client's preface
// (the TLS layer after ALPN chose h2, or for h2c the socket), pre the
// bytes of it already read (copied; for h2c, the preface the HTTP/1
// server recognised and what came with it). It returns engine.Park
// when the connection has no stream left (its goroutines and read buffer
// given back, see the package doc), engine.Close when it ended, and
// engine.Detach when another goroutine took it over (a graceful shutdown
// or the idle timeout ending it). c.Conn is replaced by a wrapper of nc
// that Resume recognises; later dispatches must go to Resume.
func (s *Server) ServeEngine(c *engine.Conn, nc net.Conn, pre []byte) engine.Action {
	hc := newConn(s, nc)
	hc.ec = c
	if len(pre) > len(hc.rbuf) {
		hc.rbuf = make([]byte, len(pre))
	}
	hc.w = copy(hc.rbuf, pre)
	c.Conn = &parkable{Conn: nc, c: hc}
	s.add(hc)
	return hc.served(func() engine.Action {
		if !hc.start() {
			return engine.Close
		}
		return hc.loop()
	})
}

// Resume serves a later dispatch of a connection that ServeEngine
// parked, as ServeEngine does; ok is false when c is not one.
func Resume(c *engine.Conn) (a engine.Action, ok bool) {
	p, ok := c.Conn.(*parkable)
	if !ok {
		return engine.Close, false
	}
	return p.c.resume(), true
}

// parkable is an engine connection's stream while h2conn serves it: it
// marks the connection for Resume.
type parkable struct {
	net.Conn
	c *conn
}

// served runs the read loop (run) on an engine dispatch and ends the
// connection's time on the server when it does not park; a panic, which
// the engine recovers and reports, ends it too.
func (c *conn) served(run func() engine.Action) (a engine.Action) {
	a = engine.Close
	defer func() {
		if a != engine.Park {
			if v := recover(); v != nil {
				c.abortStreams()
				c.closeNow()
				c.s.drop(c)
				panic(v)
			}
			c.s.drop(c)
		}
	}()
	a = run()
	return a
}

// resume runs the read loop again on a dispatch of a parked connection.
func (c *conn) resume() engine.Action {
	if !c.unpark() {
		// Claimed by a shutdown or the idle timeout, whose goroutine ends
		// it (and closes c.ec).
		return engine.Detach
	}
	return c.served(c.loop)
}

// unpark takes a parked connection back for the read loop; false when
// it was claimed.
func (c *conn) unpark() bool {
	c.mu.Lock()
	defer c.mu.Unlock() // a panic in the net.Conn leaves the lock free
	if !c.parked {
		return false
	}
	c.parked = false
	c.s.idle.unlink(c)
	c.active = getActive()
	c.streams, c.out = c.spareStreams, c.spareOut
	c.spareStreams, c.spareOut = nil, nil
	if c.streams == nil {
		c.streams = map[uint32]*stream{}
	}
	c.setAddrs()
	c.deadline = dlNone
	if c.cfg.IdleTimeout > 0 {
		c.deadline = dlIdle
	}
	c.restoreDeadlineLocked()
	return true
}

// parkableLocked reports whether the connection has nothing going on
// that needs its goroutines: no stream, no handler, nothing to write, no
// shutdown or close begun. c.mu is held. An open header block is the
// reader's to see (c.hb is not under c.mu): loop looks at it before
// tryPark, and a wake-up during one only costs the reader a read again.
func (c *conn) parkableLocked() bool {
	return c.ec != nil && c.prefaced && c.active != nil && len(c.streams) == 0 && c.handlers == 0 && len(c.out) == 0 && !c.writing &&
		!c.goingAway && !c.closing && c.broken == nil
}

// parkGrace is how long a connection stays idle before it parks: a
// client that sends its next request within it (one request after
// another) costs no park and wake-up each.
const parkGrace = 100 * time.Millisecond

// wakeToParkLocked has the reader's blocking read end parkGrace from now
// (or at the idle timeout, when that comes first) when the connection
// went idle (the last stream ended, the writer sent the last frames, the
// reader read everything), so that it parks if it is still idle then.
// c.mu is held.
func (c *conn) wakeToParkLocked() {
	if c.inPark || c.deadline == dlPark || c.deadline == dlWake || c.deadline == dlHeader || !c.parkableLocked() {
		return
	}
	at := time.Now().Add(parkGrace)
	if c.cfg.IdleTimeout > 0 && c.idleDeadline().Before(at) {
		at = c.idleDeadline()
	}
	c.deadline = dlPark
	c.nc.SetReadDeadline(at)
}

// armPark is wakeToParkLocked for the reader, which read all there was.
func (c *conn) armPark() {
	c.mu.Lock()
	defer c.mu.Unlock() // a panic in the net.Conn leaves the lock free for served's recover
	c.wakeToParkLocked()
}

// parkWoken handles a read that timed out: true when wakeToParkLocked
// woke it, its deadline then set back to the idle timeout's.
func (c *conn) parkWoken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadline != dlPark {
		return false
	}
	c.deadline = dlNone
	if c.cfg.IdleTimeout > 0 {
		c.deadline = dlIdle
	}
	c.restoreDeadlineLocked()
	c.parkDue = true
	return true
}

// restoreDeadlineLocked sets the read deadline that c.deadline names
// (after a non-blocking read, or a resume). c.mu is held.
func (c *conn) restoreDeadlineLocked() {
	switch c.deadline {
	case dlIdle:
		c.nc.SetReadDeadline(c.idleDeadline())
	case dlWake, dlPark:
		c.nc.SetReadDeadline(time.Now())
	default:
		c.nc.SetReadDeadline(time.Time{})
	}
}

// tryPark parks the connection when it is idle and the client sent
// nothing more: the writer ends, the read buffer goes back to its pool,
// and only the connection's state (HPACK table, settings, windows) stays.
// It is called by the reader with no byte buffered; false: go on reading.
//
// crypto/tls may hold bytes epoll cannot see (a record read ahead, or
// decrypted and not yet returned): a read that may not wait takes them
// first, and a socket that has bytes or an end of stream waiting is read
// at once rather than parked.
func (c *conn) tryPark() bool {
	c.mu.Lock()
	if !c.parkableLocked() {
		c.mu.Unlock()
		return false
	}
	c.inPark, c.stopWriter = true, true
	c.wcond.Signal()
	on, done := c.writerOn, c.writerDone
	c.mu.Unlock()
	if on {
		<-done // the writer is idle: it ends at once
	}
	c.r, c.w = 0, 0
	more := c.probe()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inPark, c.stopWriter = false, false
	if more || !c.parkableLocked() || c.writerOn {
		c.restoreDeadlineLocked()
		return false
	}
	c.parked = true
	c.unpinDecoder()
	c.spareStreams, c.spareOut = c.streams, c.out[:0] // both empty
	putActive(c.active)
	c.active, c.out, c.streams, c.writerDone = nil, nil, nil, nil
	if c.cfg.IdleTimeout > 0 {
		c.s.idle.link(c)
	}
	return true
}

// probe reads what the TLS layer holds without waiting, and reports
// whether there is something to read: bytes now in the buffer, or bytes
// or an end of stream on the socket.
func (c *conn) probe() bool {
	if c.tls {
		c.nc.SetReadDeadline(longAgo)
		n, err := c.nc.Read(c.rbuf)
		c.nc.SetReadDeadline(time.Time{}) // RawConn.Read below honours it too
		c.w += n
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return true // bytes, or an error the next read reports
		}
	}
	ready := false
	c.ec.Raw().Read(func(fd uintptr) bool {
		var one [1]byte
		n, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ready = n > 0 || (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
		return true
	})
	return ready
}

// longAgo is a deadline in the past: a read under it takes only what is
// buffered.
var longAgo = time.Unix(1, 0)

// claimParkedLocked takes a parked connection for the caller, which must
// then end it (endClaimed); a dispatch meanwhile returns Detach. c.mu is
// held.
func (c *conn) claimParkedLocked() bool {
	if !c.parked {
		return false
	}
	c.parked = false
	c.s.idle.unlink(c)
	return true
}

// endClaimed ends a claimed parked connection: GOAWAY with code, the
// linger, the close.
func (c *conn) endClaimed(code uint32) {
	c.closeGoAway(code)
	c.ec.Close()
	c.s.drop(c)
}

// active is what a connection holds only while it is served, not
// parked: the read buffer, which holds a frame of the default size
// (larger only while a larger frame is read), the header block being
// read and the connection's addresses (read again from the socket on
// a resume).
//
// It also keeps, for the next connection served, the empty stream map
// and the output buffers of the last one that parked: a connection that
// parks between requests does not make them again each time.
type active struct {
	rbuf          []byte
	r, w          int
	hb            headerBlock
	remote, local netip.AddrPort
	spareStreams  map[uint32]*stream
	spareOut      []byte // c.out's buffer
	spareW        []byte // the writer's buffer, left when it ended
}

// maxSpare bounds an output buffer kept for the next connection.
const maxSpare = 16 << 10

// actives are the active states of parked connections, for the next to
// be served.
var actives = sync.Pool{New: func() any { return &active{rbuf: getReadBuf()} }}

func getActive() *active { return actives.Get().(*active) }

// putActive gives a back, with a read buffer of the default size.
// Lifetime: called only when no stream is open, so nothing views the
// buffer: request fields are HPACK's own strings, DATA is copied into
// its stream.
func putActive(a *active) {
	rbuf := a.rbuf
	if cap(rbuf) != frameHeaderLen+defaultFrameSize {
		rbuf = getReadBuf()
	}
	sm, so, sw := a.spareStreams, a.spareOut, a.spareW
	if len(sm) != 0 {
		sm = nil
	}
	if cap(so) > maxSpare {
		so = nil
	}
	if cap(sw) > maxSpare {
		sw = nil
	}
	*a = active{rbuf: rbuf[:cap(rbuf)], spareStreams: sm, spareOut: so, spareW: sw}
	actives.Put(a)
}

func getReadBuf() []byte { return make([]byte, frameHeaderLen+defaultFrameSize) }

// unpinDecoder has the HPACK decoder forget the read buffer: after a
// header block its own buffer is an empty view of the block's last
// fragment, which would keep a pooled read buffer alive as long as the
// connection. One indexed field of the static table (:method GET),
// decoded with emission off, makes it view a static array instead; the
// dynamic table does not change.
func (c *conn) unpinDecoder() {
	on := c.dec.EmitEnabled()
	c.dec.SetEmitEnabled(false)
	c.dec.Write(hpackStaticField)
	c.dec.Close()
	c.dec.SetEmitEnabled(on)
}

var hpackStaticField = []byte{0x82}
