//go:build linux

package engine

import (
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fdConn is a socket owned by the engine: a plain non-blocking
// descriptor, read and written with read(2) and write(2); an accepted
// client socket (from accept4(2)), or the upstream side of a tunnel that
// the engine took out of Go's poller (tunnel.adopt). It is not in Go's
// poller: when a call would block, the
// goroutine waits for the engine's own epoll loop to report the socket
// ready (loop.await), so a connection costs no runtime.pollDesc and no
// netFD. It implements net.Conn, syscall.Conn and the *net.TCPConn
// methods the engine and its handlers use (CloseWrite, SetLinger).
//
// Reads are serialised among themselves, and so are writes, as with a
// net.Conn. The descriptor is reference counted: it is closed when Close
// was called and no call still uses it, so its number is never reused
// under a call.
type fdConn struct {
	w       *watch // the socket's registration
	fd      int32
	refs    atomic.Int32 // 1 while open, plus one per call using fd
	closing atomic.Bool
	dl      [2]atomic.Int64 // read, write deadlines in Unix nanoseconds; 0: none
	mu      [2]sync.Mutex   // serialises reads, writes
	wt      atomic.Pointer[waiter]
}

func (s *fdConn) init(w *watch, fd int) {
	s.w, s.fd = w, int32(fd)
	s.refs.Store(1)
}

// incref takes a reference for a call; false once the connection closes.
func (s *fdConn) incref() bool {
	for {
		r := s.refs.Load()
		if r <= 0 || s.closing.Load() {
			return false
		}
		if s.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// decref drops a reference; the last one closes the descriptor.
func (s *fdConn) decref() error {
	if s.refs.Add(-1) == 0 {
		return unix.Close(int(s.fd))
	}
	return nil
}

// Close closes the socket: calls waiting on it return net.ErrClosed, and
// the descriptor is closed when the last of them has returned.
func (s *fdConn) Close() error {
	if !s.closing.CompareAndSwap(false, true) {
		return s.opErr("close", net.ErrClosed)
	}
	s.wake(dirRead)
	s.wake(dirWrite)
	if err := s.decref(); err != nil {
		return s.opErr("close", os.NewSyscallError("close", err))
	}
	return nil
}

// Read reads from the socket, waiting for bytes under the read deadline.
func (s *fdConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := s.do(dirRead, func(fd int) bool {
		n, rerr = unix.Read(fd, b)
		s.noteRead(n, len(b), rerr)
		return !(rerr == unix.EAGAIN || rerr == unix.EINTR)
	})
	switch {
	case err != nil:
		return 0, s.opErr("read", err)
	case rerr != nil:
		return 0, s.opErr("read", os.NewSyscallError("read", rerr))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// readNow is one read(2) that does not wait (Conn.TryRead).
func (s *fdConn) readNow(b []byte) (int, error) {
	var n int
	var rerr error
	if err := s.do(dirRead, func(fd int) bool {
		n, rerr = unix.Read(fd, b)
		s.noteRead(n, len(b), rerr)
		return true
	}); err != nil {
		return 0, s.opErr("read", err)
	}
	return max(n, 0), rerr
}

// noteRead tells the loop that a read of size bytes found the socket
// drained: EAGAIN, or fewer bytes than asked (a stream socket's read
// takes all it has; one that stops at the end of stream is told apart by
// evHup). A read of EAGAIN that goes on to wait clears it again with its
// next try (do).
func (s *fdConn) noteRead(n, size int, err error) {
	if err == unix.EAGAIN || (err == nil && n > 0 && n < size) {
		s.w.ev.Or(evDrained)
	}
}

// Write writes all of b, waiting for room under the write deadline.
func (s *fdConn) Write(b []byte) (int, error) {
	var n int
	var werr error
	err := s.do(dirWrite, func(fd int) bool {
		for n < len(b) {
			m, err := unix.Write(fd, b[n:])
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err != nil:
				werr = err
				return true
			}
			n += m
		}
		return true
	})
	switch {
	case err != nil:
		return n, s.opErr("write", err)
	case werr != nil:
		return n, s.opErr("write", os.NewSyscallError("write", werr))
	}
	return n, nil
}

// maxIovecs bounds one writev(2) (IOV_MAX is 1024).
const maxIovecs = 1024

// writeBuffers writes every buffer of v with writev(2) and consumes v, as
// (*net.TCPConn).Write on net.Buffers does.
func (s *fdConn) writeBuffers(v *net.Buffers) (int64, error) {
	var total int64
	var werr error
	var iovs [16][]byte
	err := s.do(dirWrite, func(fd int) bool {
		for len(*v) > 0 {
			vec := iovs[:0]
			for _, b := range *v {
				if len(vec) == maxIovecs {
					break
				}
				if len(b) > 0 {
					vec = append(vec, b)
				}
			}
			if len(vec) == 0 {
				*v = (*v)[:0]
				return true
			}
			m, err := unix.Writev(fd, vec)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err != nil:
				werr = err
				return true
			}
			total += int64(m)
			consume(v, m)
		}
		return true
	})
	switch {
	case err != nil:
		return total, s.opErr("writev", err)
	case werr != nil:
		return total, s.opErr("writev", os.NewSyscallError("writev", werr))
	}
	return total, nil
}

// consume drops the first n bytes of v.
func consume(v *net.Buffers, n int) {
	for len(*v) > 0 {
		b := (*v)[0]
		if n < len(b) {
			(*v)[0] = b[n:]
			return
		}
		n -= len(b)
		(*v)[0] = nil // as net.Buffers does: drop the reference
		*v = (*v)[1:]
	}
}

// CloseWrite shuts down the sending side (a FIN); reads go on.
func (s *fdConn) CloseWrite() error {
	return s.sockErr("shutdown", s.control(func(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) }))
}

// SetLinger sets SO_LINGER: 0 makes Close send a reset.
func (s *fdConn) SetLinger(sec int) error {
	l := unix.Linger{Onoff: 1, Linger: int32(sec)}
	if sec < 0 {
		l = unix.Linger{}
	}
	return s.sockErr("setsockopt", s.control(func(fd int) error { return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &l) }))
}

// arm parks the socket on l (loop.arm) with the descriptor held.
func (s *fdConn) arm(l *loop, w *watch) error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	return l.arm(w, int(s.fd))
}

// control runs f on the descriptor while holding a reference.
func (s *fdConn) control(f func(fd int) error) error {
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	return f(int(s.fd))
}

func (s *fdConn) sockErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if err != net.ErrClosed {
		err = os.NewSyscallError(op, err)
	}
	return s.opErr(op, err)
}

// opErr wraps err as *net.TCPConn does, so that callers' errors.Is and
// net.Error checks keep working. A timeout, which the TLS path meets on
// every dispatch (a read under a deadline in the past), leaves the
// addresses out: making them would be two allocations more each time.
func (s *fdConn) opErr(op string, err error) error {
	if err == os.ErrDeadlineExceeded {
		return &net.OpError{Op: op, Net: "tcp", Err: err}
	}
	return &net.OpError{Op: op, Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
}

// SetDeadline sets both deadlines.
func (s *fdConn) SetDeadline(t time.Time) error {
	s.setDeadline(dirRead, t)
	s.setDeadline(dirWrite, t)
	return nil
}

// SetReadDeadline sets the read deadline; a waiting Read sees it at once.
func (s *fdConn) SetReadDeadline(t time.Time) error { s.setDeadline(dirRead, t); return nil }

// SetWriteDeadline sets the write deadline; a waiting Write sees it at once.
func (s *fdConn) SetWriteDeadline(t time.Time) error { s.setDeadline(dirWrite, t); return nil }

func (s *fdConn) setDeadline(dir int, t time.Time) {
	var d int64
	if !t.IsZero() {
		d = max(t.UnixNano(), 1) // before 1970 is in the past all the same
	}
	if s.dl[dir].Swap(d) != d {
		s.wake(dir)
	}
}

// RemoteAddr is the client's address, as accept4(2) gave it.
func (s *fdConn) RemoteAddr() net.Addr { return net.TCPAddrFromAddrPort(s.addrs()[0]) }

// LocalAddr is the address the client connected to.
func (s *fdConn) LocalAddr() net.Addr { return net.TCPAddrFromAddrPort(s.addrs()[1]) }

// addrs returns the remote and local addresses: a client socket's, kept
// in its Conn; a tunnel's upstream side keeps none (nothing asks).
func (s *fdConn) addrs() [2]netip.AddrPort {
	if c := s.w.conn; c != nil {
		return [2]netip.AddrPort{c.remote, c.local}
	}
	return [2]netip.AddrPort{}
}

// SyscallConn returns the socket's raw connection: Control, and Read and
// Write with callbacks, which wait through the engine's loop when the
// callback returns false.
func (s *fdConn) SyscallConn() (syscall.RawConn, error) { return (*fdRaw)(s), nil }

// sockaddrAddrPort converts an address from accept4(2) or getsockname(2).
func sockaddrAddrPort(sa syscall.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *syscall.SockaddrInet6:
		ip := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 { // a link-local peer: named by its interface, as net does
			zone := strconv.Itoa(int(a.ZoneId))
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				zone = ifi.Name
			}
			ip = ip.WithZone(zone)
		}
		return netip.AddrPortFrom(ip, uint16(a.Port))
	}
	return netip.AddrPort{}
}

var (
	_ Socket          = (*fdConn)(nil)
	_ syscall.RawConn = (*fdRaw)(nil)
)
