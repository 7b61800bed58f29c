package router

import (
	"context"
	"log/slog"
	"net/http"
	"time"
)

// statusClientClosed is logged when the client went away before an answer
// (nginx's 499); it is never sent.
const statusClientClosed = 499

// respWriter counts what is written to the client. It keeps the wrapped
// writer reachable through Unwrap, so http.ResponseController (flush,
// hijack for 101 Switching Protocols, deadlines) still works.
type respWriter struct {
	w      http.ResponseWriter
	status int
	n      int64
}

func (w *respWriter) Header() http.Header { return w.w.Header() }

func (w *respWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.w.WriteHeader(code)
}

func (w *respWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// Unwrap returns the wrapped writer (for http.ResponseController).
func (w *respWriter) Unwrap() http.ResponseWriter { return w.w }

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
	r.access.LogAttrs(ctx, slog.LevelInfo, "request",
		slog.String("client", x.in.RemoteAddr),
		slog.String("method", x.in.Method),
		slog.String("host", x.in.Host),
		slog.String("path", x.origPath),
		slog.Int("status", x.logStatus()),
		slog.Int64("bytes_in", x.bytesIn()),
		slog.Int64("bytes_out", x.w.n),
		slog.Duration("duration", time.Since(x.start)),
		slog.String("route", route),
		slog.String("upstream", up),
		slog.String("server", server),
	)
}
