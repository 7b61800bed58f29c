package peek

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peek peeks the socket behind rc into buf until complete is satisfied,
// and returns complete's want. It consumes nothing: the next read of the
// connection returns the same bytes.
//
// Peek waits through Go's poller, so the connection's read deadline (set
// by the caller; with none Peek may wait forever) ends it with an error
// for which errors.Is(err, os.ErrDeadlineExceeded) holds. Go's poller is
// edge-triggered: after a short peek it waits for bytes that arrive later,
// and a wake-up for bytes already seen only costs one more peek (complete
// may see the same bytes twice).
//
// Other endings: ErrFull (with complete's last want) when buf fills or
// want exceeds len(buf); io.EOF when the peer closed before sending
// anything; io.ErrUnexpectedEOF when it closed after sending some bytes
// that complete found incomplete; the socket error (ECONNRESET, …) on a
// reset.
func Peek(rc syscall.RawConn, buf []byte, complete Complete) (int, error) {
	if len(buf) == 0 {
		return 0, ErrFull
	}
	p := peeker{buf: buf, complete: complete}
	if err := rc.Read(p.try); err != nil {
		return 0, fmt.Errorf("peeking: %w", err)
	}
	return p.want, p.err
}

// peeker carries one Peek's state through RawConn.Read's callback.
type peeker struct {
	buf      []byte
	complete Complete
	want     int
	err      error
}

// try peeks once; it returns false to make the poller wait for more bytes.
func (p *peeker) try(fd uintptr) bool {
	n, err := recv(int(fd), p.buf, unix.MSG_PEEK)
	switch {
	case err == unix.EAGAIN:
		return false
	case err != nil:
		p.err = fmt.Errorf("peeking: %w", err)
		return true
	case n == 0:
		p.err = io.EOF
		return true
	}
	p.want, p.err = p.complete(p.buf[:n])
	switch {
	case p.err != nil, p.want <= n:
		return true
	case p.want > len(p.buf) || n == len(p.buf):
		p.err = ErrFull
		return true
	}
	// Short: more bytes may come, unless the peer has already shut down.
	// A FIN or reset that came before this peek raises no new edge for
	// the poller to wait for, so ask the socket.
	if err := hungUp(int(fd)); err != nil {
		p.err = err
		return true
	}
	return false
}

// recv is recv(2) without a source address, retried on EINTR. It calls
// the system directly: unix.Recvfrom allocates room for an address that a
// TCP socket never returns.
func recv(fd int, b []byte, flags int) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))),
			uintptr(len(b)), uintptr(flags|unix.MSG_DONTWAIT), 0, 0)
		switch e {
		case 0:
			return int(r), nil
		case unix.EINTR:
			continue
		}
		return 0, e
	}
}

// hungUp reports, without waiting, whether the peer has closed its side
// (io.ErrUnexpectedEOF) or the socket has a pending error (that error).
func hungUp(fd int) error {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
	for {
		_, err := unix.Poll(fds[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("polling socket: %w", err)
		}
		break
	}
	ev := fds[0].Revents
	if ev&unix.POLLERR != 0 {
		serr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err == nil && serr != 0 {
			return fmt.Errorf("peeking: %w", syscall.Errno(serr))
		}
		return errors.New("peeking: socket error")
	}
	if ev&(unix.POLLRDHUP|unix.POLLHUP) != 0 {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// Consume reads exactly len(b) bytes from the socket behind rc into b,
// waiting through the poller (and so bounded by the read deadline) if they
// have not all arrived. After a Peek that returned want, Consume(rc,
// buf[:want]) takes exactly the peeked bytes off the socket and leaves
// the rest for the next read; the bytes are already there, so it does
// not wait. It returns io.ErrUnexpectedEOF if the stream ends first.
func Consume(rc syscall.RawConn, b []byte) error {
	c := consumer{b: b}
	if len(b) == 0 {
		return nil
	}
	if err := rc.Read(c.try); err != nil {
		return fmt.Errorf("consuming: %w", err)
	}
	return c.err
}

// consumer carries one Consume's state through RawConn.Read's callback.
type consumer struct {
	b   []byte
	got int
	err error
}

func (c *consumer) try(fd uintptr) bool {
	for c.got < len(c.b) {
		n, err := recv(int(fd), c.b[c.got:], 0)
		switch {
		case err == unix.EAGAIN:
			return false
		case err != nil:
			c.err = fmt.Errorf("consuming: %w", err)
			return true
		case n == 0:
			c.err = io.ErrUnexpectedEOF
			return true
		}
		c.got += n
	}
	return true
}
