//go:build linux

package engine

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// The two directions of a tunnel.
const (
	dirUp   uint8 = 0 // client bytes to up; read from the client's socket
	dirDown uint8 = 1 // up's bytes to the client; read from up
)

// tunnel copies bytes between a client connection and up. While neither
// sends, both sockets are parked on the client's loop and the tunnel is
// this struct and the two sockets: the copy buffer and the reader state
// come from a pool for each burst.
type tunnel struct {
	c      *Conn
	up     net.Conn
	upfd   fdConn       // up's socket once the engine owns it (adopt)
	upw    watch        // up's registration (direction dirDown)
	done   atomic.Int32 // bit per direction that reached end of stream
	closed atomic.Bool
	moved  [2]atomic.Int64        // bytes written in each direction
	end    atomic.Pointer[string] // how it ended, the first cause (httpmsg.Tunnel*)
}

var (
	endClient = httpmsg.TunnelClientClosed
	endServer = httpmsg.TunnelServerClosed
	endError  = httpmsg.TunnelError
)

// ended records how the tunnel ends, unless a cause came first.
func (t *tunnel) ended(how *string) { t.end.CompareAndSwap(nil, how) }

// endOf is how the tunnel ends when side's socket (dirUp: the client's,
// dirDown: the upstream's) reports err: a reset (ECONNRESET, EPIPE) is
// that side ending the connection, abruptly (a server that closed with
// the client's last bytes unread, which on a busy machine can reach
// edgeway before the server's end of stream does); anything else is an
// error.
func endOf(side uint8, err error) *string {
	if !errors.Is(err, unix.ECONNRESET) && !errors.Is(err, unix.EPIPE) {
		return &endError
	}
	if side == dirUp {
		return &endClient
	}
	return &endServer
}

// fail ends the tunnel on err from side's socket.
func (t *tunnel) fail(side uint8, err error) {
	t.ended(endOf(side, err))
	t.close()
}

// report tells up, when it wants to know (httpmsg.TunnelReporter), how
// the tunnel ended and what it carried.
func (t *tunnel) report() {
	r, ok := t.up.(httpmsg.TunnelReporter)
	if !ok {
		return
	}
	t.ended(&endError) // closed with no end of stream first
	r.TunnelEnded(httpmsg.TunnelEnd{ToUpstream: t.moved[dirUp].Load(), ToClient: t.moved[dirDown].Load(), How: *t.end.Load()})
}

// startTunnel runs on the serving goroutine after Serve: it writes the
// pre-read bytes, registers up and parks both sides.
func startTunnel(c *Conn, r *tunnelReq) {
	t := &tunnel{c: c, up: r.up}
	c.engine().tunnels.Add(1)
	c.sock.SetDeadline(time.Time{}) // RawConn.Read fails at once past a read deadline
	t.up.SetDeadline(time.Time{})
	if c.TLS() != nil {
		c.Conn.SetDeadline(time.Time{})
	}
	if t.write(dirUp, r.toUp) != nil || t.write(dirDown, r.toClient) != nil {
		t.close()
		return
	}
	sc, ok := t.up.(syscall.Conn)
	if !ok || c.TLS() != nil {
		// The client's bytes pass through TLS: the socket cannot be
		// copied raw, so the tunnel keeps two goroutines.
		t.fallback()
		return
	}
	raw, err := t.adopt(sc)
	if err != nil {
		t.close()
		return
	}
	t.upw = watch{raw: raw, tun: t, dir: dirDown}
	if t.owned() {
		t.upw.reg = regET
	}
	c.l.setTunnel(&c.w, t)
	c.l.add(&t.upw)
	if !t.arm(&c.w) || !t.arm(&t.upw) {
		t.close()
		return
	}
	t.started()
}

// adopt returns the raw connection of up that the loop watches. When up
// is a plain TCP socket (a *net.TCPConn, or a wrapper that hands one over:
// httpmsg.TunnelSocket), the engine takes the socket over: it duplicates
// the descriptor into upfd and closes the *net.TCPConn, which takes the
// socket out of Go's poller and frees its poll descriptor and netFD, so
// that an idle tunnel holds the engine's own state for both sides and
// nothing of Go's net package. Config.GoPoller keeps up as it is.
func (t *tunnel) adopt(sc syscall.Conn) (syscall.RawConn, error) {
	if t.c.engine().cfg.GoPoller {
		return sc.SyscallConn()
	}
	var tc *net.TCPConn
	switch u := t.up.(type) {
	case *net.TCPConn:
		tc = u
		t.up = nil // nothing to tell it; its netFD goes with it
	case httpmsg.TunnelSocket:
		tc = u.TunnelSocket()
	}
	if tc == nil {
		return sc.SyscallConn()
	}
	fd, err := dupFD(tc)
	tc.Close() // the duplicate keeps the connection open
	if err != nil {
		return nil, fmt.Errorf("taking over the upstream socket: %w", err)
	}
	t.upfd.init(&t.upw, fd)
	return (*fdRaw)(&t.upfd), nil
}

// started hands up, when it follows its tunnel, the function that ends it.
func (t *tunnel) started() {
	if r, ok := t.up.(httpmsg.TunnelReporter); ok {
		r.TunnelStarted(t.close)
	}
}

// owned reports whether the engine took up's socket over (upfd).
func (t *tunnel) owned() bool { return t.upfd.w != nil }

// dst is where direction dir writes.
func (t *tunnel) dst(dir uint8) net.Conn {
	if dir == dirUp {
		if t.owned() {
			return &t.upfd
		}
		return t.up
	}
	if t.c.TLS() != nil {
		return t.c.Conn
	}
	return t.c.sock
}

// src is the socket direction dir reads.
func (t *tunnel) src(dir uint8) *watch {
	if dir == dirUp {
		return &t.c.w
	}
	return &t.upw
}

func (t *tunnel) write(dir uint8, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	dst := t.dst(dir)
	if d := t.c.engine().cfg.tunnelWriteTimeout(); d > 0 {
		dst.SetWriteDeadline(time.Now().Add(d))
		// The limit is for this write: a deadline left behind would fail
		// the loop's next write at once, after the tunnel sat quiet.
		defer dst.SetWriteDeadline(time.Time{})
	}
	n, err := dst.Write(b)
	t.moved[dir].Add(int64(n))
	return err
}

// parkDrained arms w after a read through its raw connection saw it
// drained (EAGAIN, or fewer bytes than asked): on the engine's own socket
// that costs no system call (loop.arm).
func (t *tunnel) parkDrained(w *watch) bool {
	w.ev.Or(evDrained)
	return t.arm(w)
}

func (t *tunnel) arm(w *watch) bool {
	var err error
	cerr := w.raw.Control(func(fd uintptr) { err = t.c.l.arm(w, int(fd)) })
	return cerr == nil && err == nil
}

// inlineBurst is the most a tunnel moves on the loop goroutine per event;
// a longer burst continues on a goroutine of its own (pump).
const inlineBurst = 16 << 10

// pumpInline moves one read of direction dir on the loop goroutine: when
// the source has at most len(buf) bytes and the destination takes them
// without blocking, the source is armed again and no goroutine ever runs.
// Anything else (more bytes waiting, a full destination) goes on in pump,
// on its own goroutine, so one busy tunnel never holds the loop up.
func (t *tunnel) pumpInline(dir uint8, buf []byte) {
	defer t.recoverPanic()
	src := t.src(dir)
	n, err := readOnce(src.raw, buf)
	switch {
	case n > 0:
		w, werr := writeOnce(t.src(1-dir).raw, buf[:n])
		t.moved[dir].Add(int64(w))
		switch {
		case werr != nil && !errors.Is(werr, unix.EAGAIN):
			t.fail(1-dir, werr)
		case w < n:
			p := pumps.Get().(*pumpBuf)
			go t.finishWrite(dir, p, copy(p.buf[:], buf[w:n]))
		case n == len(buf):
			go t.pump(dir) // there may be more
		default:
			if !t.parkDrained(src) {
				t.close()
			}
		}
	case errors.Is(err, unix.EAGAIN):
		if !t.parkDrained(src) {
			t.close()
		}
	case errors.Is(err, unix.EINTR):
		if !t.arm(src) {
			t.close()
		}
	case err == nil:
		t.halfClose(dir)
	default:
		t.fail(dir, err)
	}
}

// finishWrite writes the n bytes in p that the destination did not take
// at once, then goes on pumping.
func (t *tunnel) finishWrite(dir uint8, p *pumpBuf, n int) {
	defer t.recoverPanic()
	err := t.write(dir, p.buf[:n])
	pumps.Put(p) // Lifetime: the write is done; nothing else saw p

	if err != nil {
		t.fail(1-dir, err)
		return
	}
	t.pump(dir)
}

// readOnce is one non-blocking read(2) of the socket behind raw.
func readOnce(raw syscall.RawConn, b []byte) (int, error) {
	var n int
	var err error
	if cerr := raw.Read(func(fd uintptr) bool {
		n, err = unix.Read(int(fd), b)
		return true
	}); cerr != nil {
		return 0, cerr
	}
	return max(n, 0), err
}

// writeOnce is one non-blocking write(2) to the socket behind raw.
func writeOnce(raw syscall.RawConn, b []byte) (int, error) {
	var n int
	var err error
	if cerr := raw.Write(func(fd uintptr) bool {
		n, err = unix.Write(int(fd), b)
		return true
	}); cerr != nil {
		return 0, cerr
	}
	return max(n, 0), err
}

// pump moves what direction dir's source has now, then parks the source
// again; it runs on its own goroutine for each readiness event.
func (t *tunnel) pump(dir uint8) {
	defer t.recoverPanic()
	if pp := getPipe(); pp != nil {
		t.splicePump(dir, pp)
		return
	}
	p := pumps.Get().(*pumpBuf)
	defer pumps.Put(p) // Lifetime: read into and written from here only
	src := t.src(dir)
	for {
		n, err := p.read(src.raw)
		if n > 0 {
			if err := t.write(dir, p.buf[:n]); err != nil {
				t.fail(1-dir, err)
				return
			}
			continue
		}
		if !t.idle(dir, src, err) {
			return
		}
	}
}

// idle handles a read of direction dir's source that moved nothing: it
// parks the source (EAGAIN), passes an end of stream on, or closes the
// tunnel on an error, and reports whether to read again (EINTR).
func (t *tunnel) idle(dir uint8, src *watch, err error) bool {
	switch {
	case errors.Is(err, unix.EINTR):
		return true
	case errors.Is(err, unix.EAGAIN):
		if !t.parkDrained(src) {
			t.close()
		}
	case err == nil: // end of stream
		t.halfClose(dir)
	default:
		t.fail(dir, err)
	}
	return false
}

// halfClose passes an end of stream on; the tunnel closes when both
// directions have ended.
func (t *tunnel) halfClose(dir uint8) {
	if dir == dirUp {
		t.ended(&endClient)
	} else {
		t.ended(&endServer)
	}
	cw, ok := t.dst(dir).(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		t.close()
		return
	}
	if bit := int32(1) << dir; t.done.Or(bit)|bit == 3 {
		t.close()
	}
}

// recoverPanic, deferred by everything that moves a tunnel's bytes (on
// the loop's goroutine or its own), ends only this tunnel on a panic.
func (t *tunnel) recoverPanic() {
	if v := recover(); v != nil {
		panics.Report("tunnel", v)
		t.close()
	}
}

// close closes both sides once.
func (t *tunnel) close() {
	if !t.closed.CompareAndSwap(false, true) {
		return
	}
	t.c.l.forget(&t.upw)
	t.report()
	if t.up != nil {
		t.up.Close()
	}
	if t.owned() {
		t.upfd.Close()
	}
	t.c.Close()
	t.c.engine().tunnels.Add(-1)
}

// fallback copies with two goroutines when up has no file descriptor to
// park (a TLS client connection, say).
func (t *tunnel) fallback() {
	var wg sync.WaitGroup
	for dir, src := range [2]net.Conn{t.c.Conn, t.up} {
		wg.Go(func() {
			defer t.recoverPanic()
			n, err := io.Copy(t.dst(uint8(dir)), src)
			t.moved[dir].Add(n)
			if err != nil {
				t.ended(&endError)
			}
			t.halfClose(uint8(dir))
		})
	}
	panics.Go("tunnel", func() { wg.Wait(); t.close() })
	t.started()
}

// pumpBuf is the copy buffer of one burst with the state of its
// non-blocking read(2): RawConn.Read's callback returns true at once, so
// Go's poller never waits and EAGAIN comes back to pump.
type pumpBuf struct {
	buf [32 << 10]byte
	n   int
	err error
	fn  func(fd uintptr) bool // p.once, bound once per buffer
}

var pumps = sync.Pool{New: func() any {
	p := new(pumpBuf)
	p.fn = p.once
	return p
}}

func (p *pumpBuf) once(fd uintptr) bool {
	p.n, p.err = unix.Read(int(fd), p.buf[:])
	return true
}

func (p *pumpBuf) read(raw syscall.RawConn) (int, error) {
	if err := raw.Read(p.fn); err != nil {
		return 0, err
	}
	return max(p.n, 0), p.err
}
