package router

import (
	"context"
	"log/slog"
	"time"

	"github.com/edgeway/edgeway/upstream/httpclient"
)

// forward proxies the request to a server of the route's pool.
//
// Streaming: a response of unknown length (chunked, close-delimited) is
// flushed after every read from the upstream, so a stream is never held
// back; a response with a Content-Length goes out through the writer's
// buffer, which saves a write(2) per response on small answers.
func (x *exchange) forward() {
	if x.refuseLargeBody() {
		return
	}
	if x.buffersBody() && !x.bufferBody() {
		return
	}
	if !x.admit() {
		return
	}
	pool := x.rt.pool
	x.cancel.Reset()
	if idle := x.idleTimeout(); idle > 0 {
		x.wd.start(x.w.w, x.cancelFn, idle)
	}
	x.buildOutbound()
	if x.rt.mirrors != nil {
		x.mirror()
	}
	if pol := x.retryPolicy(); x.out.Body != nil && x.bufState == bufNone && pol.Attempts > 0 && pol.BodyBuffer > 0 && !streamsBody(pool, x.in) {
		if err := x.keepBody(pol.BodyBuffer); err != nil {
			x.proxyError(&httpclient.BodyError{Err: err}) // nothing was forwarded
			return
		}
	}
	switch {
	case x.out.Body == nil:
	case x.tap == nil: // buffered whole: a gate of its own
		x.gate = &bodyGate{r: x.out.Body}
		x.out.Body = x.gate
	default:
		// From here on the body is read on the upstream client's writer
		// goroutine: through a gate that the end of the exchange closes.
		x.tap.gate.r = x.out.Body
		x.gate = &x.tap.gate
		x.out.Body = x.gate
	}
	var err error
	for try := 0; ; try++ {
		s, perr := pool.Pick(x.in, x.tried)
		if perr != nil {
			x.noServer(perr, err)
			return
		}
		x.server, x.serverDone, x.tried = s, false, append(x.tried, s)
		x.upStart, x.resp = time.Now(), httpclient.Response{}
		err = pool.Transport().Do(s.Addr, &x.out, &x.resp)
		x.upHead = time.Since(x.upStart)
		if !x.retryable(try, err) {
			break
		}
		x.endTry(err)
	}
	if err != nil {
		x.proxyError(err)
		return
	}
	if x.resp.Status == 101 {
		x.tunnel()
		return
	}
	x.relay()
}

// admit applies the pool's max_requests limit: past it the request fails
// at once with 503.
func (x *exchange) admit() bool {
	limit := x.rt.pool.MaxRequests()
	if limit <= 0 || x.rt.pool.InFlight() < int64(limit) {
		return true
	}
	x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "upstream limit reached",
		slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
		slog.String("limit", "max_requests"), slog.Int("max_requests", limit))
	x.countLimit("max_requests")
	x.plainError(503)
	return false
}

// noServer answers when Pick finds no server: 503 for a first try; after
// failed tries, the last failure's answer.
func (x *exchange) noServer(perr, last error) {
	if last != nil || x.resp.Status != 0 {
		if last != nil {
			x.proxyError(last)
		} else {
			x.plainError(x.resp.Status)
		}
		return
	}
	x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "no upstream server",
		slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream), slog.Any("error", perr))
	x.plainError(503)
}
