package upstream

import (
	"bufio"
	"io"
	"sync"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

const bodyBufSize = 32 << 10

var bodyBufs = sync.Pool{New: func() any { return new([bodyBufSize]byte) }}

// writeBody streams the request body after the buffered head, flushing
// after every read so that a streamed upload is never held back. It runs
// on its own goroutine while the caller waits for the response.
func (c *conn) writeBody(req *Request, w *bufio.Writer) {
	buf := bodyBufs.Get().(*[bodyBufSize]byte)
	var err error
	if req.ContentLength > 0 {
		err = copyFixed(w, req.Body, req.ContentLength, buf[:])
	} else {
		err = copyChunked(w, req, buf[:])
	}
	bodyBufs.Put(buf)
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

func copyFixed(w *bufio.Writer, r io.Reader, n int64, buf []byte) error {
	for n > 0 {
		m, err := r.Read(buf[:min(int64(len(buf)), n)])
		if m > 0 {
			n -= int64(m)
			if _, err := w.Write(buf[:m]); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		switch {
		case err == io.EOF && n > 0:
			return bodyReadError{errBodyShort}
		case err == io.EOF:
			return nil
		case err != nil:
			return bodyReadError{err}
		}
	}
	return nil
}

// chunkRoom is the space kept before the data for the chunk size line.
const chunkRoom = 8

func copyChunked(w *bufio.Writer, req *Request, buf []byte) error {
	for {
		m, err := req.Body.Read(buf[chunkRoom : len(buf)-2])
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
		if err == io.EOF {
			break
		}
		if err != nil {
			return bodyReadError{err}
		}
	}
	w.WriteString("0\r\n")
	if req.Trailer != nil {
		if err := writeFields(w, req.Trailer()); err != nil {
			return bodyReadError{err}
		}
	}
	w.WriteString("\r\n")
	return w.Flush()
}

// writeFields writes trailer fields, each name and value checked so that
// none can smuggle a line break upstream.
func writeFields(w *bufio.Writer, h httpmsg.Header) error {
	for _, f := range h {
		if !httpsyntax.ValidToken(f.Name) || !httpsyntax.ValidFieldValue(f.Value) {
			return errBadHeader
		}
		w.WriteString(f.Name)
		w.WriteString(": ")
		w.WriteString(f.Value)
		w.WriteString("\r\n")
	}
	return nil
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
