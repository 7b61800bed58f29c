package http1

import (
	"errors"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Write implements httpmsg.ResponseWriter. Without a head it writes an
// implicit 200 of unknown length first.
func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.status == 0 {
		w.WriteHead(http.StatusOK, nil, -1)
	}
	switch {
	case w.noBody && w.x.req.Method == "HEAD" && w.status >= 200:
		return len(p), nil // the length went in the head; nothing is sent
	case w.noBody:
		return 0, ErrBodyNotAllowed
	case w.ended:
		return 0, ErrBodyEnded
	case len(p) == 0:
		return 0, nil
	}
	if w.clen >= 0 && w.n+int64(len(p)) > w.clen {
		n, _ := w.Write(p[:w.clen-w.n])
		w.close = true
		return n, ErrBodyTooLong
	}
	w.n += int64(len(p))
	if w.chunked {
		return len(p), w.writeChunk(p)
	}
	return len(p), w.out(p)
}

// writeChunk sends p as one chunk.
func (w *writer) writeChunk(p []byte) error {
	w.wbuf = http1.AppendChunkHeader(w.wbuf, len(p))
	if len(w.wbuf)+len(p)+2 <= cap(w.wbuf) {
		w.wbuf = append(w.wbuf, p...)
		w.wbuf = append(w.wbuf, "\r\n"...)
		return nil
	}
	return w.writev(p, crlf)
}

var crlf = []byte("\r\n")

// out buffers p, or sends the buffer and p together when p does not fit:
// in one writev when p is large (no copy), else after one write of the
// buffer.
func (w *writer) out(p []byte) error {
	switch {
	case len(w.wbuf)+len(p) <= cap(w.wbuf):
		w.wbuf = append(w.wbuf, p...)
		return nil
	case len(p) >= smallBuf/2:
		return w.writev(p, nil)
	}
	if err := w.flush(); err != nil {
		return err
	}
	w.wbuf = append(w.wbuf, p...)
	return nil
}

// writev sends the buffer, p and tail in one system call.
func (w *writer) writev(p, tail []byte) error {
	if w.err != nil {
		return w.err
	}
	w.vec = append(w.vecArr[:0], w.wbuf, p)
	if tail != nil {
		w.vec = append(w.vec, tail)
	}
	err := w.slowWrite(w.writeVec) // a long body: the timer is worth its cost
	w.vecArr = [3][]byte{}
	w.wbuf = w.wbuf[:0]
	return w.fail(err)
}

// flush sends the buffer.
func (w *writer) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.wbuf) == 0 {
		return nil
	}
	err := w.send(w.wbuf)
	w.wbuf = w.wbuf[:0]
	return w.fail(err)
}

// send writes b to the client. One non-blocking write(2) comes first: a
// client that keeps reading takes a response without a timer being set.
// When the socket buffer is full the rest goes out with a Write that waits
// (on the engine's loop, or in Go's poller for a *net.TCPConn) under the
// write timeout, which is cleared afterwards, so a parked connection holds
// no timer.
func (w *writer) send(b []byte) error {
	if w.x.tls {
		return w.slowWrite(func() error { _, err := w.x.c.Write(b); return err })
	}
	w.try = b
	if err := w.x.c.Raw().Write(w.tryFn); err != nil {
		return err
	}
	n, err := w.tryN, w.tryErr
	w.try, w.tryErr = nil, nil
	if err == nil && n == len(b) {
		return nil
	}
	if err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR) {
		return err
	}
	return w.slowWrite(func() error { _, err := w.x.c.Write(b[n:]); return err })
}

// tryWrite is the callback of send's non-blocking write.
func (w *writer) tryWrite(fd uintptr) bool {
	n, err := syscall.Write(int(fd), w.try)
	w.tryN, w.tryErr = max(n, 0), err
	return true
}

// slowWrite runs write with the write timeout as the connection's write
// deadline.
func (w *writer) slowWrite(write func() error) error {
	d := w.x.s.writeTimeout()
	if d <= 0 {
		return write()
	}
	w.x.c.SetWriteDeadline(time.Now().Add(d))
	err := write()
	w.x.c.SetWriteDeadline(time.Time{})
	return err
}

// fail remembers a write error: the connection closes after the handler.
func (w *writer) fail(err error) error {
	if err != nil && w.err == nil {
		w.err = err
		w.close = true
	}
	return err
}

func (w *writer) writeVec() error {
	_, err := w.x.c.WriteBuffers(&w.vec) // writev on the socket
	return err
}

// Flush implements httpmsg.ResponseWriter. Without a head it writes an
// implicit 200 of unknown length first.
func (w *writer) Flush() error {
	if w.status == 0 && w.err == nil {
		w.WriteHead(http.StatusOK, nil, -1)
	}
	return w.flush()
}

// WriteTrailer implements httpmsg.ResponseWriter: it ends a chunked body
// with the fields of h; other framings cannot carry them and drop them.
func (w *writer) WriteTrailer(h httpmsg.Header) error {
	if w.err != nil {
		return w.err
	}
	if w.status == 0 {
		w.WriteHead(http.StatusOK, nil, -1)
	}
	if !w.chunked || w.ended {
		return nil
	}
	w.ended = true
	w.wbuf = append(w.wbuf, "0\r\n"...)
	w.wbuf = appendFields(w.wbuf, h)
	w.wbuf = append(w.wbuf, "\r\n"...)
	return nil
}

// end completes the response after the handler returned: an implicit
// empty 200 when it wrote nothing (as Go's server does), the last chunk,
// then a flush. A 101 without a tunnel, or a body shorter than its
// Content-Length, closes the connection.
func (w *writer) end() error {
	if w.status == 0 && w.err == nil {
		w.WriteHead(http.StatusOK, nil, 0)
	}
	switch {
	case w.chunked:
		w.WriteTrailer(nil)
	case w.status == http.StatusSwitchingProtocols || w.noBody:
	case w.clen >= 0 && w.n < w.clen && w.x.req.Method != "HEAD":
		w.Abort()
		return w.err
	}
	if w.connect2xx() {
		w.close = true
	}
	return w.flush()
}

// Tunnel implements httpmsg.ResponseWriter. It is allowed after a 101, or
// after a 2xx to CONNECT, once the request body (if any) was read. The
// head is sent at once; the engine copies pre and the client bytes
// buffered behind the request, and carries the tunnel once Serve returns.
func (w *writer) Tunnel(up net.Conn, pre []byte) error {
	x := w.x
	ok := w.status == http.StatusSwitchingProtocols || w.connect2xx()
	err := w.err
	switch {
	case err != nil:
	case !ok || w.tunneled || !x.body.done():
		err = ErrNotTunnel
	default:
		err = w.flush()
	}
	if err != nil {
		up.Close()
		return err
	}
	w.tunneled = true
	x.c.Tunnel(up, x.buf[x.r:x.w], pre)
	x.r, x.w = 0, 0
	return nil
}

// Abort implements httpmsg.ResponseWriter: the connection is reset once
// the handler returns, without finishing the body, so that the client
// cannot take a truncated body for a complete one. Later writes fail.
func (w *writer) Abort() {
	w.aborted = true
	w.close = true
	w.wbuf = w.wbuf[:0]
	if w.err == nil {
		w.err = errAborted
	}
}

var errAborted = errors.New("http1: response aborted")

// SetReadDeadline implements httpmsg.ResponseWriter: it sets the
// connection's read deadline, which bounds the handler's body reads. It
// may be called from another goroutine while the handler runs. The
// deadline is removed before the connection reads its next request.
func (w *writer) SetReadDeadline(t time.Time) error {
	c := w.x.c
	if c == nil {
		return net.ErrClosed // the exchange is over
	}
	w.x.dl.Store(true)
	return c.SetReadDeadline(t)
}
