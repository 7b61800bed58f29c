package router

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// statusClientClosed is logged when the client went away before an answer
// (nginx's 499); it is never sent.
const statusClientClosed = 499

// respWriter counts what is written to the client.
type respWriter struct {
	w      httpmsg.ResponseWriter
	status int
	n      int64
	id     string          // the request ID, sent on final heads
	hdr    *httpmsg.Header // the exchange's buffer for a head with the ID
}

// WriteHead records a final status and sends the head, with the request
// ID on a final one.
func (w *respWriter) WriteHead(code int, h httpmsg.Header, bodyLen int64) error {
	if code >= 200 || code == 101 {
		if w.status == 0 {
			w.status = code
		}
		if w.id != "" {
			*w.hdr = withRequestID(*w.hdr, h, w.id)
			h = *w.hdr
		}
	}
	return w.w.WriteHead(code, h, bodyLen)
}

func (w *respWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

func (r *Router) logAccess(x *exchange, d time.Duration) {
	ctx := context.Background()
	if !r.access.Enabled(ctx, slog.LevelInfo) {
		return
	}
	var route, up, server string
	if x.rt != nil {
		route, up = x.rt.name, x.rt.upstream
	}
	if x.server != nil {
		server = x.server.Addr
	}
	// Lifetime: query, user_agent and sni view the request, client and
	// trace_id the exchange's logBuf and traceHex; the handler writes the
	// line before LogAttrs returns.
	a := [...]slog.Attr{
		slog.String("listener", x.l.name),
		slog.String("protocol", x.in.Protocol()),
		slog.String("client", bytesString(x.in.RemoteAddr.AppendTo(x.logBuf[:0]))),
		slog.String("method", x.in.Method),
		slog.String("host", x.in.Host),
		slog.String("path", x.origPath),
		slog.String("query", loggedQuery(r.query, x.in.RawQuery())),
		slog.Int("status", x.logStatus()),
		slog.Int64("bytes_in", x.bytesIn()),
		slog.Int64("bytes_out", x.w.n),
		slog.Float64("duration", d.Seconds()),
		slog.String("route", route),
		slog.String("upstream", up),
		slog.String("server", server),
		slog.Int("tries", len(x.tried)),
		slog.String("user_agent", x.in.Header.Get("User-Agent")),
		slog.String("request_id", x.reqID),
		slog.Float64("upstream_connect", x.resp.Connect.Seconds()),
		slog.Float64("upstream_header", x.upHead.Seconds()),
		slog.String("tls_version", tlsVersionName(x.in.TLSVersion)),
		slog.String("sni", x.in.ServerName),
		{},
	}
	n := len(a) - 1
	if x.in.TLSVersion == 0 {
		n -= 2 // not TLS
	}
	if x.tc.on {
		hex.Encode(x.traceHex[:], x.tc.hop.TraceID[:])
		a[n] = slog.String("trace_id", bytesString(x.traceHex[:]))
		n++
	}
	r.access.LogAttrs(ctx, slog.LevelInfo, "request", a[:n]...)
}

// tlsVersionName names a TLS version as nginx's $ssl_protocol does.
func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "TLSv1.3"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS10:
		return "TLSv1"
	case 0:
		return ""
	}
	return tls.VersionName(v)
}

// lineSampler decides which requests' access-log lines are written: all
// errors (status 400 and up, 499 included), every request at least slow
// long, and of the rest a share (below/2^32, drawn per request).
type lineSampler struct {
	all   bool   // no sampling: every line
	below uint32 // a line is kept when a random uint32 is under it
	slow  time.Duration
}

// newLineSampler leaves out a share leaveOut (0 to 1) of the lines of
// successful requests faster than slow.
func newLineSampler(leaveOut float64, slow time.Duration) lineSampler {
	switch {
	case leaveOut <= 0:
		return lineSampler{all: true}
	case leaveOut >= 1:
		return lineSampler{slow: slow}
	}
	return lineSampler{below: uint32((1 - leaveOut) * (1 << 32)), slow: slow}
}

// keep reports whether the line of a request that ended with status after
// d is written.
func (s lineSampler) keep(status int, d time.Duration) bool {
	if s.all || status >= 400 || (s.slow > 0 && d >= s.slow) {
		return true
	}
	return rand.Uint32() < s.below
}

// loggedQuery is what the access log writes of query q in mode ("keep"
// or "", "redact", "drop"): redact keeps each parameter's name and writes
// "x" for its value, so that a token in a URL never reaches the logs.
func loggedQuery(mode, q string) string {
	switch {
	case q == "" || mode == "" || mode == "keep":
		return q
	case mode == "drop":
		return ""
	}
	var b strings.Builder
	for i, p := range strings.Split(q, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		name, _, hasValue := strings.Cut(p, "=")
		b.WriteString(name)
		if hasValue {
			b.WriteString("=x")
		}
	}
	return b.String()
}

func (x *exchange) bytesIn() int64 {
	if x.tap == nil {
		return x.body.Size()
	}
	return x.tap.n.Load()
}

func (x *exchange) logStatus() int {
	if x.status != 0 {
		return x.status
	}
	if x.w.status == http.StatusSwitchingProtocols && x.in.ProtoMajor >= 2 {
		// A WebSocket over HTTP/2 or HTTP/3 (extended CONNECT): the
		// front end answered the upstream's 101 with the 200 its client
		// saw, and that is what the log and the metrics say.
		return http.StatusOK
	}
	return x.w.status
}
