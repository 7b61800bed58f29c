package engine

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// Conn is one client connection. It embeds the connection's stream, at
// first the accepted socket (the engine's own descriptor, or a
// *net.TCPConn with Config.GoPoller): Read, Write, the deadlines and the
// rest of net.Conn work as usual while a Handler serves it.
type Conn struct {
	net.Conn
	sock       Socket // the accepted socket
	fd         fdConn // the socket, unless Config.GoPoller
	l          *loop
	w          watch // the connection's registration on l
	prev, next *Conn // l's idle list (or its held list), guarded by l.mu
	parkedAt   time.Duration
	tunReq     *tunnelReq // asked for by Tunnel during Serve
	held       *heldHead  // Hold: a request begun, kept while parked

	remote, local netip.AddrPort // the engine's socket's (fd), from accept
}

// heldHead is what Hold keeps of a request that has begun: its bytes so
// far and when the connection is closed if the rest has not come.
type heldHead struct {
	b  []byte
	by time.Duration // the engine's clock (Engine.now)
}

// Hold keeps b, the start of a request the handler read but cannot parse
// yet (a head that has not ended), with the connection while it is
// parked, so that a client that sends a head slowly holds no goroutine
// and no buffer: the handler calls it, then returns Park. Held gives the
// bytes back at the next dispatch. A connection still parked at deadline
// is closed by the loop (its head timeout; the idle timeout does not
// apply to it). b is copied.
func (c *Conn) Hold(b []byte, deadline time.Time) {
	c.held = &heldHead{b: append([]byte(nil), b...), by: c.engine().now() + time.Until(deadline)}
}

// Held returns and forgets what Hold kept: the bytes and the deadline.
// ok is false when nothing is held.
func (c *Conn) Held() (b []byte, deadline time.Time, ok bool) {
	h := c.held
	if h == nil {
		return nil, time.Time{}, false
	}
	c.held = nil
	return h.b, time.Now().Add(h.by - c.engine().now()), true
}

// Conn is kept small: it is most of what a parked connection costs the
// engine (see doc.go).
func (c *Conn) engine() *Engine { return c.l.e }

// TLS returns the connection's TLS layer when its bytes pass through one
// (a Handler set c.Conn to a *tls.Conn after the handshake), else nil.
// Raw socket reads and writes (Raw) would then bypass it.
func (c *Conn) TLS() *tls.Conn {
	t, _ := c.Conn.(*tls.Conn)
	return t
}

// Fresh reports whether no Handler has replaced the connection's stream
// (c.Conn is still the accepted socket): its first dispatch.
func (c *Conn) Fresh() bool { return c.sock != nil && c.Conn == net.Conn(c.sock) }

// Socket returns the accepted TCP socket, whatever stream a Handler put
// in front of it. It is a net.Conn and a syscall.Conn and has
// *net.TCPConn's CloseWrite and SetLinger.
func (c *Conn) Socket() Socket { return c.sock }

// Socket is what the engine and its handlers need of an accepted socket:
// the engine's own descriptor, or a *net.TCPConn (Config.GoPoller).
type Socket interface {
	net.Conn
	syscall.Conn
	CloseWrite() error
	SetLinger(sec int) error
}

// RemoteAddrPort is the stream's RemoteAddr as a netip.AddrPort, with no
// allocation when the stream is the accepted socket or TLS over it.
func (c *Conn) RemoteAddrPort() netip.AddrPort {
	if c.ownSocket() != nil {
		return c.remote
	}
	return addrPort(c.Conn.RemoteAddr())
}

// LocalAddrPort is the stream's LocalAddr as a netip.AddrPort, as
// RemoteAddrPort.
func (c *Conn) LocalAddrPort() netip.AddrPort {
	if c.ownSocket() != nil {
		return c.local
	}
	return addrPort(c.Conn.LocalAddr())
}

// ownSocket returns the engine's descriptor when the stream is it, or TLS
// directly over it; else nil.
func (c *Conn) ownSocket() *fdConn {
	nc := c.Conn
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	if s, ok := nc.(*fdConn); ok {
		return s
	}
	return nil
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}

// WriteBuffers writes v to the stream with one writev(2) where it can (the
// accepted socket, its own or a *net.TCPConn), and consumes v.
func (c *Conn) WriteBuffers(v *net.Buffers) (int64, error) {
	if s, ok := c.Conn.(*fdConn); ok {
		return s.writeBuffers(v)
	}
	return v.WriteTo(c.Conn)
}

// TryRead reads what the socket has now into b, without waiting: a
// read(2) on the accepted socket, whose errors (syscall.EAGAIN when there
// is nothing) come back as they are; n is never negative. On the
// engine's own socket it also tells the engine whether b took everything
// (a short read), so that parking afterwards costs no system call. A
// read deadline in the past fails it as Read would.
func (c *Conn) TryRead(b []byte) (int, error) {
	if c.sock == Socket(&c.fd) {
		return c.fd.readNow(b)
	}
	// A *net.TCPConn (Config.GoPoller) or a Conn made by hand: the
	// closure is an allocation per call, which only those modes pay.
	var n int
	var err error
	if rerr := c.Raw().Read(func(fd uintptr) bool {
		n, err = syscall.Read(int(fd), b)
		return true
	}); rerr != nil {
		return 0, rerr
	}
	return max(n, 0), err
}

// Raw returns the socket's syscall.RawConn, for non-blocking reads and
// writes (RawConn.Read and Write with a callback that tries once). A Conn
// made by hand around a net.Conn (benchmarks) gets it from that conn.
func (c *Conn) Raw() syscall.RawConn {
	if c.w.raw == nil {
		if sc, ok := c.Conn.(syscall.Conn); ok {
			c.w.raw, _ = sc.SyscallConn()
		}
	}
	return c.w.raw
}

// Close closes the connection and frees its MaxConns slot. It is safe
// from any goroutine; calls after the first do nothing and return nil.
func (c *Conn) Close() error {
	if c.w.ev.Or(evClosed)&evClosed != 0 {
		return nil
	}
	if c.l.forget(&c.w) == stDetached {
		c.engine().detached.Add(-1)
	}
	err := c.sock.Close()
	c.engine().released()
	if err != nil {
		return fmt.Errorf("closing connection: %w", err)
	}
	return nil
}

// Abort closes the connection with a reset (SO_LINGER 0) rather than a
// FIN, for a connection refused abruptly: no TIME_WAIT is left on our
// side.
func (c *Conn) Abort() {
	c.sock.SetLinger(0)
	c.Close()
}

// Tunnel turns the connection into a two-way byte stream with up
// (typically the upstream *net.TCPConn after an HTTP 101). toUp holds
// client bytes already read that belong to the tunnel, sent to up first;
// toClient holds bytes already read from up, sent to the client first
// (both are copied). The engine starts the tunnel when Serve returns,
// whatever it returns. From this call on, closing up is the engine's job.
//
// A tunnel holds no goroutine and no buffer while neither side sends:
// both sockets are parked on the loop. When a side is readable the bytes
// available are copied to the other with a pooled buffer; end of stream
// from one side half-closes (CloseWrite) the other; the tunnel closes
// both when both directions have ended, or at the first error.
func (c *Conn) Tunnel(up net.Conn, toUp, toClient []byte) {
	c.tunReq = &tunnelReq{up: up, toUp: append([]byte(nil), toUp...), toClient: append([]byte(nil), toClient...)}
}

// serve runs the handler on a dispatched connection and carries out its
// answer.
func (c *Conn) serve() {
	e := c.engine()
	e.active.Add(1)
	a := Close
	defer func() {
		e.active.Add(-1)
		if v := recover(); v != nil {
			if !panics.IsAbort(v) {
				panics.Report("connection handler", v, slog.String("remote", c.RemoteAddr().String()))
			}
			a = Close
		}
		c.after(a)
	}()
	a = e.h.Serve(c)
}

func (c *Conn) after(a Action) {
	if r := c.tunReq; r != nil {
		c.tunReq = nil
		startTunnel(c, r)
		return
	}
	switch a {
	case Park:
		c.park()
	case Detach:
		c.detach()
	default:
		c.Close()
	}
}

// park waits for the connection's next bytes on its loop; a connection
// that cannot be parked (shutdown, closed, ...) is closed.
func (c *Conn) park() {
	if c.w.ev.Load()&evClosed != 0 {
		return
	}
	c.parkedAt = c.engine().now()
	c.fd.dropWaiter()
	var err error
	if c.sock == Socket(&c.fd) {
		err = c.fd.arm(c.l, &c.w) // no closure to allocate
	} else {
		cerr := c.w.raw.Control(func(fd uintptr) { err = c.l.arm(&c.w, int(fd)) })
		err = errors.Join(cerr, err)
	}
	if err != nil {
		c.Close()
	}
}

// detach forgets the connection until its Close.
func (c *Conn) detach() {
	c.l.detach(&c.w)
}

// tunnelReq is a Tunnel call waiting for Serve to return.
type tunnelReq struct {
	up             net.Conn
	toUp, toClient []byte
}

// watch is one socket registered on a loop: a client connection, or the
// upstream side of a tunnel. Fields other than raw, conn and tun are
// guarded by the loop's mutex.
type watch struct {
	raw   syscall.RawConn
	conn  *Conn         // nil for a tunnel's upstream side
	tun   *tunnel       // set once the socket belongs to a tunnel
	idx   uint32        // slot index + 1 in the loop's table; 0: none
	gen   uint32        // generation of the slot, against stale events
	ev    atomic.Uint32 // evIn, evOut, evDrained, evHup (et only), evClosed
	state uint8
	dir   uint8 // for a tunnel: the direction this socket's bytes go
	waits uint8 // waitIn, waitOut: calls on the engine's socket waiting (fdConn.wait)
	reg   uint8 // regAdded, regET, regOut: its epoll registration
}

// The bits of watch.reg.
const (
	regAdded uint8 = 1 << iota // registered in the epoll set
	regET                      // the engine's own socket: registered once, edge-triggered (see loop)
	regOut                     // regET: the registration reports writable too
)

// evClosed is the bit of watch.ev that Conn.Close sets (client side only).
const evClosed uint32 = 16

// The states of a watch.
const (
	stBusy     uint8 = iota // being served or copied, or not yet armed
	stArmed                 // waiting for an event
	stDetached              // handed over by Detach
	stClosed
)

// fire runs what a readable socket needs, on its own goroutine.
//
// A tunnel's burst is copied on the loop goroutine itself when it is small
// and the other side takes it at once (a WebSocket message, typically):
// no goroutine is started for it. See tunnel.pumpInline.
func (w *watch) fire(buf []byte) {
	if w.tun != nil {
		w.tun.pumpInline(w.dir, buf)
		return
	}
	go w.conn.serve()
}
