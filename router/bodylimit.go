package router

import (
	"context"
	"log/slog"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// Request body limit (conf.Listener.MaxBodyBytes).
//
// A declared Content-Length over the limit is answered 413 before a server
// is picked. A body of unknown length (chunked) is counted by the bodyTap
// as it streams; the Read that crosses the limit fails with
// errBodyTooLarge, which makes the upstream client abort the request and
// close that connection, and proxyError turns it into 413 when no response
// has started (otherwise the client connection is aborted). Either way the
// client's body is left unread, so the front end closes an HTTP/1
// connection after the 413 unless it can drain the rest.

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

// refuseLargeBody answers 413 when the request declares a body longer than
// the listener allows, and reports whether it did.
func (x *exchange) refuseLargeBody() bool {
	limit := x.maxBody()
	if limit <= 0 || x.in.ContentLength <= limit {
		return false
	}
	x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "request body too large",
		slog.String("route", x.rt.name), slog.Int64("content_length", x.in.ContentLength),
		slog.Int64("max_body_bytes", limit))
	x.tooLarge()
	return true
}

// maxBody is the request body limit of the request's route: its own
// max_body_bytes or the listener's; 0: none.
func (x *exchange) maxBody() int64 {
	switch n := x.rt.maxBody; {
	case n == 0:
		return x.l.maxBody
	case n < 0:
		return 0
	default:
		return n
	}
}

// retryPolicy is the route's retries block, or its pool's.
func (x *exchange) retryPolicy() *conf.Retry {
	if x.rt.retry != nil {
		return x.rt.retry
	}
	return x.rt.pool.Retry()
}

// idleTimeout is the route's idle_timeout, or its pool's.
func (x *exchange) idleTimeout() time.Duration {
	if x.rt.idleTimeout > 0 {
		return x.rt.idleTimeout
	}
	return x.rt.pool.IdleTimeout()
}

// tooLarge answers 413. The body is unread, so an HTTP/1 connection must
// not be reused; on HTTP/2 only the stream ends.
func (x *exchange) tooLarge() { x.writeText(413, errorBodies[413], true) }

// limitRead cuts a read that takes the body past limit: it passes on the
// bytes up to the limit and returns errBodyTooLarge. total is the
// byte count including this read.
func limitRead(n int, total, limit int64) (int, error) {
	if limit <= 0 || total <= limit {
		return n, nil
	}
	over := total - limit
	if over > int64(n) {
		over = int64(n)
	}
	return n - int(over), errBodyTooLarge
}
