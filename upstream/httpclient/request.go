package httpclient

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"sync"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// ErrBodyPanic fails a request whose body reader panicked on the body
// writer's goroutine (the panic is reported there): a fault of the proxy,
// neither the client's nor the server's.
var ErrBodyPanic = errors.New("the request body's reader panicked")

const bodyBufSize = 32 << 10

// bodyBuf is the copy buffer of a request body, holding the body's first
// read until the head goes out.
type bodyBuf struct {
	b   [bodyBufSize]byte
	n   int  // bytes of the first read, at b[off:]
	eof bool // the first read ended the body
}

var bodyBufs = sync.Pool{New: func() any { return new(bodyBuf) }}

// readFirst reads the start of the request body before a server is
// contacted: a client whose body is broken from its first bytes (bad
// chunk framing, an overlong chunk extension, a reset) fails the request
// with a *BodyError and nothing is sent upstream. The bytes then go out
// right behind the head.
func readFirst(req *Request) (*bodyBuf, error) {
	bb := bodyBufs.Get().(*bodyBuf)
	lo, hi := 0, bodyBufSize
	if req.ContentLength < 0 {
		lo, hi = chunkRoom, bodyBufSize-2
	} else {
		hi = int(min(int64(hi), req.ContentLength))
	}
	for {
		n, err := req.Body.Read(bb.b[lo:hi])
		bb.n, bb.eof = n, err == io.EOF
		if err != nil && err != io.EOF {
			bodyBufs.Put(bb)
			return nil, &BodyError{Err: err}
		}
		if n > 0 || bb.eof {
			return bb, nil
		}
	}
}

// outBody is what the body writer needs of a Request, copied when it
// starts: the Request itself may be reused by the caller once the
// exchange ended, while the writer can still be running (the response
// came before the body was sent).
type outBody struct {
	r       io.Reader
	n       int64 // Content-Length; -1: chunked
	trailer func() httpmsg.Header
}

// writeBody streams the request body after the buffered head, flushing
// after every read so that a streamed upload is never held back. It runs
// on its own goroutine while the caller waits for the response; it starts
// with the bytes readFirst took, and owns bb (it pools it when done).
// A panic in the body's reader fails the request like a broken body.
func (c *conn) writeBody(body outBody, w *bufio.Writer, bb *bodyBuf) {
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				panics.Report("upstream request body writer", v, slog.String("server", c.hp.addr))
				err = bodyReadError{ErrBodyPanic}
			}
		}()
		if body.n > 0 {
			err = copyFixed(w, body.r, body.n, bb)
		} else {
			err = copyChunked(w, body, bb)
		}
	}()
	bodyBufs.Put(bb)
	rerr, isRead := err.(bodyReadError)
	c.mu.Lock()
	if isRead {
		c.bodyErr = rerr.err
	} else if err == nil && !c.headDone {
		c.armTimeout()
	}
	c.mu.Unlock()
	if isRead {
		c.nc.Close() // the request cannot be completed
	}
	c.wdone <- err
}

// bodyReadError is a failure to read the request body (as opposed to a
// failure to send it).
type bodyReadError struct{ err error }

func (e bodyReadError) Error() string { return e.err.Error() }

func copyFixed(w *bufio.Writer, r io.Reader, n int64, bb *bodyBuf) error {
	buf, m, eof := bb.b[:], bb.n, bb.eof
	for {
		if m > 0 {
			n -= int64(m)
			if _, err := w.Write(buf[:m]); err != nil {
				return err
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
		switch {
		case n <= 0:
			return nil
		case eof:
			return bodyReadError{errBodyShort}
		}
		var err error
		m, err = r.Read(buf[:min(int64(len(buf)), n)])
		switch {
		case err == io.EOF:
			eof = true
		case err != nil:
			return bodyReadError{err}
		}
	}
}

// chunkRoom is the space kept before the data for the chunk size line.
const chunkRoom = 8

func copyChunked(w *bufio.Writer, body outBody, bb *bodyBuf) error {
	buf, m, eof := bb.b[:], bb.n, bb.eof
	for {
		if m > 0 {
			start := putChunkSize(buf[:chunkRoom], m)
			buf[chunkRoom+m], buf[chunkRoom+m+1] = '\r', '\n'
			if _, err := w.Write(buf[start : chunkRoom+m+2]); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if eof {
			break
		}
		var err error
		m, err = body.r.Read(buf[chunkRoom : len(buf)-2])
		switch {
		case err == io.EOF:
			eof = true
		case err != nil:
			return bodyReadError{err}
		}
	}
	var trailer httpmsg.Header
	if body.trailer != nil {
		trailer = body.trailer()
	}
	b, err := http1.AppendLastChunk(w.AvailableBuffer(), trailer)
	if err != nil {
		return bodyReadError{err}
	}
	w.Write(b)
	return w.Flush()
}

// putChunkSize writes "<hex size>\r\n" right-aligned in b and returns
// where it starts.
func putChunkSize(b []byte, n int) int {
	i := len(b) - 2
	b[i], b[i+1] = '\r', '\n'
	for {
		i--
		b[i] = "0123456789abcdef"[n&15]
		n >>= 4
		if n == 0 {
			return i
		}
	}
}
