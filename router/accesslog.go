package router

import (
	"context"
	"log/slog"
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

func (r *Router) logAccess(x *exchange) {
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
	// Lifetime: query and user_agent view the request; the handler
	// writes the line before LogAttrs returns.
	r.access.LogAttrs(ctx, slog.LevelInfo, "request",
		slog.String("listener", x.l.name),
		slog.String("protocol", x.in.Protocol()),
		slog.String("client", x.in.RemoteAddr.String()),
		slog.String("method", x.in.Method),
		slog.String("host", x.in.Host),
		slog.String("path", x.origPath),
		slog.String("query", loggedQuery(r.query, x.in.RawQuery())),
		slog.Int("status", x.logStatus()),
		slog.Int64("bytes_in", x.bytesIn()),
		slog.Int64("bytes_out", x.w.n),
		slog.Float64("duration", time.Since(x.start).Seconds()),
		slog.String("route", route),
		slog.String("upstream", up),
		slog.String("server", server),
		slog.Int("tries", len(x.tried)),
		slog.String("user_agent", x.in.Header.Get("User-Agent")),
		slog.String("request_id", x.reqID),
	)
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
		return 0
	}
	return x.tap.n.Load()
}

func (x *exchange) logStatus() int {
	if x.status != 0 {
		return x.status
	}
	return x.w.status
}
