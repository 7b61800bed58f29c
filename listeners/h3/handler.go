package h3

import (
	"io"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
)

// gate stands before the Options.Handler: it counts requests, applies
// the 0-RTT rules and settles the body of a request that has none.
type gate struct {
	s    *Server
	next http.Handler
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.s.stats.requests.Add(1)
	if g.s.o.Allow0RTT && isEarly(r) {
		// The request came in 0-RTT data, which an attacker can replay:
		// only a safe method is served, marked as early (RFC 8470 §5).
		if !safeMethod(r.Method) {
			g.s.stats.early.Add(1)
			w.WriteHeader(http.StatusTooEarly)
			return
		}
		r.Header.Set("Early-Data", "1")
	}
	settleBody(w, r)
	g.next.ServeHTTP(w, r)
}

// isEarly reports whether r arrived before its connection's handshake
// completed: in 0-RTT data. Without Allow0RTT no request can.
func isEarly(r *http.Request) bool {
	c, ok := r.Context().Value(connKey{}).(*quic.Conn)
	if !ok {
		return false
	}
	select {
	case <-c.HandshakeComplete():
		return false
	default:
		return true
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// settleWait bounds how long settleBody waits for the end of the stream
// of a request whose method conventionally has no body.
const settleWait = time.Second

// settleBody gives a request without Content-Length whose stream ends
// with its header section what HTTP/1.1 and HTTP/2 give it: ContentLength
// 0 and http.NoBody. quic-go's http3 (v0.65) leaves ContentLength -1 and
// a body (quic-go issue 5685), which a proxy would forward as a chunked
// body of nothing. HTTP/3 has no end-of-stream flag on HEADERS: the end
// of the stream may come in the same packet or in a later one. So it
// reads the body's first byte under a deadline: for GET, HEAD, OPTIONS,
// DELETE and TRACE (which rarely have a body) up to settleWait, which
// the end of the stream normally meets within a round trip; for other
// methods a deadline already passed, so it never waits. The end of the
// stream or a byte settles it; a deadline reached leaves the request as
// it was: unknown length, forwarded as it streams. A timed-out read
// before a frame's first byte consumes nothing.
func settleBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != -1 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	d, ok := w.(interface{ SetReadDeadline(time.Time) error })
	deadline := time.Now()
	if usuallyBodyless(r.Method) {
		deadline = deadline.Add(settleWait)
	}
	if !ok || d.SetReadDeadline(deadline) != nil {
		return
	}
	var one [1]byte
	n, err := r.Body.Read(one[:])
	d.SetReadDeadline(time.Time{})
	switch {
	case n == 1:
		r.Body = &prefixed{first: one[0], rest: r.Body}
	case err == io.EOF:
		r.Body, r.ContentLength = http.NoBody, 0
	}
}

func usuallyBodyless(m string) bool {
	return safeMethod(m) || m == http.MethodDelete || m == http.MethodTrace
}

// prefixed is a body whose first byte settleBody has read.
type prefixed struct {
	first byte
	done  bool
	rest  io.ReadCloser
}

func (p *prefixed) Read(b []byte) (int, error) {
	if p.done || len(b) == 0 {
		return p.rest.Read(b)
	}
	p.done = true
	b[0] = p.first
	if len(b) == 1 {
		return 1, nil
	}
	n, err := p.rest.Read(b[1:])
	return n + 1, err
}

func (p *prefixed) Close() error { return p.rest.Close() }
