package router

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/edgeway/edgeway/conf"
)

// Request body limit (conf.Listener.MaxBodyBytes).
//
// A declared Content-Length over the limit is answered 413 before a server
// is picked. A body of unknown length (chunked) is counted by the bodyTap
// as it streams; the Read that crosses the limit fails with
// *http.MaxBytesError, which makes the transport abort the upstream request
// and close that connection, and proxyError turns it into 413 when no
// response has started (otherwise ReverseProxy aborts the client
// connection). Either way the client's body is left unread, so an HTTP/1
// connection is closed after the 413.

// bodyLimit is the limit a listener enforces: the zero value of the field
// means the default, a negative one no limit (returned as 0).
func bodyLimit(lc conf.Listener) int64 {
	switch n := lc.MaxBodyBytes; {
	case n == 0:
		return conf.DefaultMaxBodyBytes
	case n < 0:
		return 0
	default:
		return n
	}
}

var connClose = []string{"close"}

// refuseLargeBody answers 413 when the request declares a body longer than
// the listener allows, and reports whether it did.
func (x *exchange) refuseLargeBody() bool {
	limit := x.l.maxBody
	if limit <= 0 || x.in.ContentLength <= limit {
		return false
	}
	x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "request body too large",
		slog.String("route", x.rt.name), slog.Int64("content_length", x.in.ContentLength),
		slog.Int64("max_body_bytes", limit))
	x.tooLarge(&x.w)
	return true
}

// tooLarge answers 413. The body is unread, so an HTTP/1 connection must
// not be reused; on HTTP/2 only the stream ends (Connection: close would
// make the server close the whole connection).
func (x *exchange) tooLarge(w http.ResponseWriter) {
	if x.in.ProtoMajor == 1 {
		w.Header()["Connection"] = connClose
	}
	code := http.StatusRequestEntityTooLarge
	http.Error(w, http.StatusText(code), code)
}

// limitRead cuts a read that takes the body past limit: it passes on the
// bytes up to the limit and returns *http.MaxBytesError. total is the
// byte count including this read.
func limitRead(n int, total, limit int64) (int, error) {
	if limit <= 0 || total <= limit {
		return n, nil
	}
	over := total - limit
	if over > int64(n) {
		over = int64(n)
	}
	return n - int(over), &http.MaxBytesError{Limit: limit}
}
