//go:build linux

package engine

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Response bodies go through the kernel too: SpliceFrom moves a body of
// known length from the server's socket into a pipe and from the pipe
// into the client's, never into edgeway's memory, for as long as the
// client keeps up. It never waits for the client: the first time the
// client's socket takes no more, it stops and hands the bytes left in
// the pipe to its caller, who buffers them and the rest of the body (so
// a slow client still frees the server at once).

// ErrNotSpliceable is SpliceFrom's answer for a connection whose bytes do
// not go to its socket as they are (TLS), or when no pipe can be made.
var ErrNotSpliceable = errors.New("engine: connection cannot be spliced into")

// SpliceFrom moves up to n bytes from src, a socket waited on in Go's
// poller (its read deadline and Close end a wait), to c's socket. It
// returns when n bytes are taken from src, when c's socket is full (Held
// bytes then wait in Rest), or on an error: an end of stream of src
// before n bytes is io.ErrUnexpectedEOF. progress is called after each
// read of src.
func (c *Conn) SpliceFrom(src syscall.RawConn, n int64, progress func()) (httpmsg.SpliceResult, error) {
	var res httpmsg.SpliceResult
	dst := c.Raw()
	if c.TLS() != nil || dst == nil {
		return res, ErrNotSpliceable
	}
	p := getPipe()
	if p == nil {
		return res, ErrNotSpliceable
	}
	for res.Moved < n {
		var k int64
		var err error
		if cerr := src.Read(func(fd uintptr) bool {
			k, err = unix.Splice(int(fd), nil, p.w, nil, int(min(n-res.Moved, pipeSize)), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			return !errors.Is(err, unix.EAGAIN) // the pipe is empty: EAGAIN is the socket's
		}); cerr != nil {
			putPipe(p, true)
			return res, cerr
		}
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			putPipe(p, true)
			return res, err
		case k == 0:
			putPipe(p, true)
			return res, io.ErrUnexpectedEOF
		}
		if progress != nil {
			progress()
		}
		for k > 0 {
			var m int64
			var werr error
			if cerr := dst.Write(func(fd uintptr) bool {
				m, werr = unix.Splice(p.r, nil, int(fd), nil, int(k), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				return true // never waits for the client
			}); cerr != nil {
				putPipe(p, false)
				res.ClientErr = true
				return res, cerr
			}
			if m > 0 {
				res.Moved += m
				k -= m
				continue
			}
			switch {
			case errors.Is(werr, unix.EINTR):
			case errors.Is(werr, unix.EAGAIN):
				res.Held = k
				res.Rest = &pipeRest{p: p, left: k}
				return res, nil
			case werr == nil:
				werr = io.ErrShortWrite
				fallthrough
			default:
				putPipe(p, false)
				res.ClientErr = true
				return res, werr
			}
		}
	}
	putPipe(p, true)
	return res, nil
}

// pipeRest reads the bytes a SpliceFrom left in its pipe.
type pipeRest struct {
	p    *pipe
	left int64
}

func (r *pipeRest) Read(b []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > r.left {
		b = b[:r.left]
	}
	for {
		n, err := unix.Read(r.p.r, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n > 0 {
			r.left -= int64(n)
			return n, nil
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return 0, err // the bytes are in the pipe: EAGAIN cannot happen
	}
}

// Close gives the pipe back (emptied) or closes it.
func (r *pipeRest) Close() error {
	if r.p != nil {
		putPipe(r.p, r.left == 0)
		r.p = nil
	}
	return nil
}
