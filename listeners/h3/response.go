package h3

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
)

// responseWriter is http.ResponseWriter on a request stream. The header
// section and small writes are gathered into one buffer so that a small
// response leaves in one stream write.
type responseWriter struct {
	st          *quic.Stream
	header      http.Header
	status      int
	wroteHeader bool
	buf         []byte // pending bytes: HEADERS and DATA frames
	fields      []Field
	err         error
}

// flushAt is the size of pending bytes that is written at once.
const flushAt = 16 << 10

func newResponseWriter(st *quic.Stream) *responseWriter {
	return &responseWriter{st: st, header: make(http.Header, 4)}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.buf = w.appendHeaders(w.buf, code, w.header, false)
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		w.flush() // an interim response leaves now
		return
	}
	w.status, w.wroteHeader = code, true
}

// appendHeaders appends a HEADERS frame: the status and fields of h, or
// (trailer) the fields under http.TrailerPrefix and those declared in
// Trailer.
func (w *responseWriter) appendHeaders(b []byte, code int, h http.Header, trailer bool) []byte {
	w.fields = w.fields[:0]
	if !trailer {
		w.fields = append(w.fields, Field{":status", strconv.Itoa(code)})
	}
	for k, vv := range h {
		name := k
		switch {
		case trailer && strings.HasPrefix(k, http.TrailerPrefix):
			name = k[len(http.TrailerPrefix):]
		case trailer:
			if !declared(w.header["Trailer"], k) {
				continue
			}
		case strings.HasPrefix(k, http.TrailerPrefix) || k == "Trailer" || isConnectionField(k):
			continue
		}
		name = lowerName(name)
		for _, v := range vv {
			w.fields = append(w.fields, Field{name, v})
		}
	}
	start := len(b)
	b = append(b, make([]byte, 16)...) // room for the frame header
	b = appendFieldSection(b, w.fields)
	n := len(b) - start - 16
	hdr := appendFrameHeader(make([]byte, 0, 16), frameHeaders, uint64(n))
	copy(b[start+16-len(hdr):], hdr)
	return append(b[:start], b[start+16-len(hdr):]...)
}

func declared(list []string, k string) bool {
	for _, l := range list {
		for _, t := range strings.Split(l, ",") {
			if http.CanonicalHeaderKey(strings.TrimSpace(t)) == k {
				return true
			}
		}
	}
	return false
}

func isConnectionField(k string) bool {
	switch k {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if len(p) == 0 || !bodyAllowed(w.status) {
		return len(p), nil
	}
	w.buf = appendFrameHeader(w.buf, frameData, uint64(len(p)))
	if len(w.buf)+len(p) <= flushAt {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if err := w.flush(); err != nil {
		return 0, err
	}
	if _, err := w.st.Write(p); err != nil {
		w.err = err
		return 0, err
	}
	return len(p), nil
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified
}

func (w *responseWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.st.Write(w.buf)
	w.buf = w.buf[:0]
	w.err = err
	return err
}

// FlushError sends what is pending (http.ResponseController uses it).
func (w *responseWriter) FlushError() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.flush()
}

// Flush implements http.Flusher.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// SetReadDeadline sets the request body's read deadline.
func (w *responseWriter) SetReadDeadline(t time.Time) error { return w.st.SetReadDeadline(t) }

// SetWriteDeadline sets the response's write deadline: a write that
// cannot finish by then (the client's flow-control window stays shut)
// fails, and the stream is reset.
func (w *responseWriter) SetWriteDeadline(t time.Time) error { return w.st.SetWriteDeadline(t) }

// finish writes what is left (the header section, pending data, the
// trailer section) and ends the stream.
func (w *responseWriter) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if hasTrailers(w.header) {
		w.buf = w.appendHeaders(w.buf, 0, w.header, true)
	}
	if err := w.flush(); err != nil {
		return err
	}
	return w.st.Close()
}

func hasTrailers(h http.Header) bool {
	if _, ok := h["Trailer"]; ok {
		return true
	}
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}
