package http1

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// Errors the ResponseWriter returns.
var (
	ErrHeadWritten    = errors.New("http1: final head already written")
	ErrBodyNotAllowed = errors.New("http1: response status allows no body")
	ErrBodyTooLong    = errors.New("http1: body longer than its declared length")
	ErrNoUpgrade      = errors.New("http1: 101 or tunnel without an Upgrade or CONNECT request")
	ErrNotTunnel      = errors.New("http1: Tunnel without a 101 (or 2xx to CONNECT) head")
	ErrBodyEnded      = errors.New("http1: Write after WriteTrailer")
)

// writer is the ResponseWriter of one exchange. It buffers the head and
// small body writes in wbuf, so that a small response leaves in one write.
type writer struct {
	x      *exchange
	wbuf   []byte // cap smallBuf unless a large head grew it
	vec    net.Buffers
	vecArr [3][]byte

	status   int   // final (or 101) status written; 0: none yet
	noBody   bool  // HEAD, 204, 304 or 101: body bytes are not sent
	chunked  bool  // chunked framing
	clen     int64 // declared length; -1: chunked or close-delimited
	n        int64 // body bytes written
	ended    bool  // the chunked body's last chunk is written
	close    bool  // the connection closes after this response
	cont     bool  // a 100 Continue was sent
	aborted  bool  // Abort was called, or the body ended short
	err      error // first write error: the connection is broken
	tunneled bool  // Tunnel handed the connection to the engine

	// send's non-blocking write: its bytes, result and callback (bound
	// once, so a write allocates nothing).
	try    []byte
	tryN   int
	tryErr error
	tryFn  func(fd uintptr) bool
}

func (w *writer) reset() {
	w.status, w.noBody, w.chunked, w.clen, w.n = 0, false, false, -1, 0
	w.ended, w.close, w.cont, w.aborted, w.err, w.tunneled = false, false, false, false, nil, false
	w.wbuf = w.wbuf[:0]
}

// release forgets the exchange's connection-bound state and gives the
// write buffer back (a head that grew it is dropped): a pooled exchange
// holds none, so that a connection whose request is still arriving (a
// slow client) holds no write buffer.
func (w *writer) release() {
	if cap(w.wbuf) == smallBuf {
		wbufs.Put((*[smallBuf]byte)(w.wbuf[:smallBuf]))
	}
	w.wbuf, w.try = nil, nil
	w.vecArr = [3][]byte{}
	w.vec = nil
}

// wbufs lends the writers' buffers, taken at an exchange's first write
// (buf) and given back by release.
var wbufs = sync.Pool{New: func() any { return new([smallBuf]byte) }}

// buf returns the write buffer, taking one from wbufs when there is none.
func (w *writer) buf() []byte {
	if w.wbuf == nil {
		w.wbuf = wbufs.Get().(*[smallBuf]byte)[:0]
	}
	return w.wbuf
}

// WriteHead implements httpmsg.ResponseWriter.
func (w *writer) WriteHead(status int, h httpmsg.Header, bodyLen int64) error {
	switch {
	case w.err != nil:
		return w.err
	case w.status != 0:
		return ErrHeadWritten
	case status < 100 || status > 999:
		return errors.New("http1: invalid status " + strconv.Itoa(status))
	case status < 200 && status != http.StatusSwitchingProtocols:
		return w.writeInterim(status, h)
	case status == http.StatusSwitchingProtocols && !w.x.upgrade:
		return ErrNoUpgrade
	}
	w.status = status
	w.frame(status, bodyLen)
	if status != http.StatusSwitchingProtocols && asksClose(h) {
		w.close = true
	}
	w.wbuf = w.appendHead(w.buf(), status, h)
	return nil
}

// writeInterim sends a 1xx other than 101 at once. HTTP/1.0 clients get
// none (RFC 9110 §15.2).
func (w *writer) writeInterim(status int, h httpmsg.Header) error {
	if w.x.req.ProtoMinor == 0 {
		return nil
	}
	if status == http.StatusContinue {
		if w.cont {
			return nil
		}
		w.cont = true
	}
	b := http1.AppendStatusLine(w.buf(), status)
	b = appendFields(b, h)
	w.wbuf = append(b, "\r\n"...)
	return w.flush()
}

// sendContinue answers Expect: 100-continue when the handler first reads
// the body, unless a final head was written (RFC 9110 §10.1.1).
func (w *writer) sendContinue() error {
	if w.status != 0 || w.cont {
		return nil
	}
	return w.writeInterim(http.StatusContinue, nil)
}

// frame decides the body framing and whether the connection persists.
func (w *writer) frame(status int, bodyLen int64) {
	x := w.x
	req := &x.req
	tunnel := status == 101 || w.connect2xx()
	w.noBody = req.Method == "HEAD" || status == 204 || status == 304 || tunnel
	w.clen = bodyLen
	switch {
	case tunnel:
		w.clen = -1 // a tunnel follows, or the connection closes
	case w.noBody || bodyLen >= 0:
	case req.ProtoMinor > 0:
		w.chunked = true
	default:
		w.close = true // HTTP/1.0: the body ends with the connection
	}
	if req.Close || x.upgrade || x.f.H2CUpgrade || x.s.shutting() || !x.body.canKeep() {
		w.close = true
	}
}

// appendHead appends the status line, the handler's fields, Date, framing
// and connection fields, and the blank line.
func (w *writer) appendHead(b []byte, status int, h httpmsg.Header) []byte {
	b = http1.AppendStatusLine(b, status)
	b = appendFields(b, h)
	if !h.Has("Date") {
		b = append(b, "Date: "...)
		b = append(b, dates.get(time.Now())...)
		b = append(b, "\r\n"...)
	}
	switch {
	case w.chunked:
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	case w.clen >= 0 && status != 204 && status >= 200:
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, w.clen, 10)
		b = append(b, "\r\n"...)
	}
	switch {
	case status == 101:
		b = append(b, "Connection: upgrade\r\n"...)
	case w.close && !w.connect2xx():
		b = append(b, "Connection: close\r\n"...)
	case !w.close && w.x.req.ProtoMinor == 0:
		b = append(b, "Connection: keep-alive\r\n"...)
	}
	return append(b, "\r\n"...)
}

// appendFields appends the fields of h that may be sent: valid ones, less
// those this writer sets itself.
func appendFields(b []byte, h httpmsg.Header) []byte {
	for _, f := range h {
		if ownField(f.Name) || !httpsyntax.ValidToken(f.Name) || !httpsyntax.ValidFieldValue(f.Value) {
			continue
		}
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	return b
}

// ownField reports whether name is a framing or connection field, which
// the writer sets from the framing it chose.
func ownField(name string) bool {
	switch len(name) {
	case 10:
		return httpmsg.EqualFold(name, "Connection") || httpmsg.EqualFold(name, "Keep-Alive")
	case 14:
		return httpmsg.EqualFold(name, "Content-Length")
	case 17:
		return httpmsg.EqualFold(name, "Transfer-Encoding")
	}
	return false
}

// connect2xx reports whether the head written is a 2xx to CONNECT: a
// tunnel follows, or the connection closes (RFC 9110 §9.3.6).
func (w *writer) connect2xx() bool {
	return w.x.req.Method == "CONNECT" && w.status >= 200 && w.status < 300
}

// asksClose reports whether h has "Connection: close": the handler asks
// for the connection to end after this response.
func asksClose(h httpmsg.Header) bool {
	for _, f := range h {
		if len(f.Name) == 10 && httpmsg.EqualFold(f.Name, "Connection") && httpsyntax.ListHas(f.Value, "close") {
			return true
		}
	}
	return false
}
