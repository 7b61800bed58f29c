package listeners

import (
	"bufio"
	"net"
	"net/http"

	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// guardUpgrades enforces the Upgrade contract with the framing guard: after
// the head of an HTTP/1 request with an Upgrade header or method CONNECT the
// guard stops parsing, so such a connection must be hijacked (a tunnel) or
// closed after the response. Any final response other than 101 therefore
// carries "Connection: close". An "Upgrade: h2c" request is never tunneled
// (RFC 9113 §3.1 removed that upgrade): its upgrade fields are removed and it
// is served as plain HTTP/1.1, then the connection closes.
func guardUpgrades(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 1 || (r.Method != http.MethodConnect && len(r.Header["Upgrade"]) == 0) {
			h.ServeHTTP(w, r)
			return
		}
		httpsyntax.StripH2CUpgrade(r.Header)
		cw := &closeWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		switch {
		case !cw.decided:
			// Nothing written: Go sends an implicit 200 (or nothing if
			// the handler hijacked through Unwrap).
			w.Header().Set("Connection", "close")
		case cw.switched && !cw.hijacked:
			// A 101 without a tunnel: what follows on the connection was
			// never parsed, so it must not be served. Hijacking flushes
			// the response; then the connection is closed.
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
		}
	})
}

// closeWriter adds "Connection: close" to a final response other than 101.
// Hijack and Flush stay reachable directly and through Unwrap (used by
// http.ResponseController and httputil.ReverseProxy).
type closeWriter struct {
	http.ResponseWriter
	decided  bool // a final status was written or the connection hijacked
	switched bool // the final status was 101
	hijacked bool
}

// WriteHeader adds "Connection: close" unless code is informational.
func (w *closeWriter) WriteHeader(code int) {
	if !w.decided && (code == http.StatusSwitchingProtocols || code >= 200) {
		w.decided = true
		w.switched = code == http.StatusSwitchingProtocols
		if !w.switched {
			w.Header().Set("Connection", "close")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *closeWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// FlushError flushes the response, writing a 200 head if none was.
func (w *closeWriter) FlushError() error {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Flush is FlushError for http.Flusher users.
func (w *closeWriter) Flush() { w.FlushError() }

// Hijack hands the connection to the handler (a tunnel). Bytes the client
// sent right behind the upgrade request may already sit in the server's
// read buffer; the returned conn yields them first, so a tunnel that reads
// the conn and not the bufio.Reader (httputil.ReverseProxy does) loses
// nothing.
func (w *closeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.decided, w.hijacked = true, true
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil || brw.Reader.Buffered() == 0 {
		return c, brw, err
	}
	return &prereadConn{Conn: c, r: brw.Reader}, brw, nil
}

// prereadConn is a hijacked connection whose first bytes were already read
// into r.
type prereadConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *prereadConn) Read(p []byte) (int, error) {
	if c.r.Buffered() > 0 {
		return c.r.Read(p)
	}
	return c.Conn.Read(p)
}

// Unwrap returns the server's ResponseWriter.
func (w *closeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
