package router

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/upstream"
)

// forward proxies the request to a server of the route's pool.
//
// Streaming: a response of unknown length (chunked, close-delimited) is
// flushed after every read from the upstream, so a stream is never held
// back; a response with a Content-Length goes out through the writer's
// buffer, which saves a write(2) per response on small answers.
func (x *exchange) forward() {
	if x.refuseLargeBody() || !x.admit() {
		return
	}
	pool := x.rt.pool
	x.cancel.Reset()
	if idle := pool.IdleTimeout(); idle > 0 {
		x.wd.start(x.w.w, x.cancelFn, idle)
	}
	x.buildOutbound()
	if pol := pool.Retry(); x.out.Body != nil && pol.Attempts > 0 && pol.BodyBuffer > 0 && !streamsBody(pool, x.in) {
		if err := x.keepBody(pol.BodyBuffer); err != nil {
			x.proxyError(&upstream.BodyError{Err: err}) // nothing was forwarded
			return
		}
	}
	if x.out.Body != nil {
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
		x.upStart, x.resp = time.Now(), upstream.Response{}
		err = pool.Transport().Do(s.Addr, &x.out, &x.resp)
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

// buildOutbound fills x.out: the target after path rewriting, the
// end-to-end fields of the request, edgeway's forwarding headers and the
// route's header operations.
func (x *exchange) buildOutbound() {
	in := x.in
	x.target = append(append(x.target[:0], x.path...), '?')
	target := x.target[:len(x.target)-1]
	if x.query != "" || in.HasQuery() {
		target = append(target, '?')
		target = append(target, x.query...)
	}
	host := in.Host
	if host == "" {
		// An HTTP/1.0 request may come without Host; name the address
		// the client connected to rather than the upstream's own.
		host = x.localHost()
	}
	x.outHdr = appendEndToEnd(x.outHdr[:0], in.Header, true)
	x.outHdr = x.setForwarded(x.outHdr)
	x.outHdr = applyHeaders(x.outHdr, x.rt.chain.reqHeader)
	// Lifetime: Target views x.target, and the other strings view the
	// client's request (the front end's buffer) or the exchange's own:
	// all valid until finish; the upstream client copies what it keeps
	// (bytesString).
	x.out = upstream.Request{
		Method: in.Method, Target: bytesString(target), Host: host, Header: x.outHdr,
		ContentLength: in.ContentLength, Ctx: in.Ctx, Trailer: in.Trailer, Cancel: &x.cancel,
		Client: in.RemoteAddr, Local: in.LocalAddr, // send_proxy's PROXY header
	}
	if in.Body != nil && in.ContentLength != 0 {
		x.tap = &bodyTap{r: in.Body, wd: &x.wd, gen: x.wd.gen(), limit: x.l.maxBody}
		x.out.Body = x.tap
		x.wd.arm(x.tap.gen, phaseUpload)
	} else {
		x.out.ContentLength = 0
	}
}

// localHost is the address the client connected to, as host:port.
func (x *exchange) localHost() string {
	if !x.in.LocalAddr.IsValid() {
		return ""
	}
	return x.in.LocalAddr.String()
}

// relay sends the upstream's response to the client.
func (x *exchange) relay() {
	resp := &x.resp
	// Lifetime: resp.Header views the upstream connection's read buffer
	// until the first body read; WriteHead serialises or copies it first.
	x.respHdr = appendEndToEnd(x.respHdr[:0], resp.Header, false)
	x.respHdr = x.sticky(applyHeaders(x.respHdr, x.rt.chain.respHeader))
	if err := x.w.WriteHead(resp.Status, x.respHdr, resp.ContentLength); err != nil || resp.Body == nil {
		if resp.Body != nil {
			resp.Body.Close()
		}
		return
	}
	stream := resp.ContentLength < 0 || isEventStream(resp.Header)
	g := x.wd.gen()
	x.wd.arm(g, phaseDownload)
	err := x.copyBody(resp.Body, stream)
	x.wd.disarm(g, phaseDownload)
	if err != nil {
		resp.Body.Close()
		x.bodyAborted(err)
		return
	}
	// An HTTP/2 server may send trailers after a body of known length;
	// a front end that cannot carry them drops them. They are written
	// before the body is closed: Close gives the upstream connection back
	// to its pool, and the trailer's strings are valid until then.
	if resp.ContentLength < 0 || len(resp.Trailer) > 0 {
		x.w.w.WriteTrailer(resp.Trailer)
	}
	resp.Body.Close()
}

// copyBody copies the response body to the client with a pooled buffer.
// A read error is the upstream's; a write error the client's (returned
// as errClientWrite).
func (x *exchange) copyBody(body io.Reader, stream bool) error {
	buf := buffers.Get()
	// Lifetime: the buffer is only read into and written from here; the
	// writers copy or send what they are given before Write returns.
	defer buffers.Put(buf)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			x.wd.touch()
			if _, err := x.w.Write(buf[:n]); err != nil {
				return errClientWrite
			}
			if stream {
				if err := x.w.w.Flush(); err != nil {
					return errClientWrite
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

var (
	errClientWrite  = errors.New("client write failed")
	errClientIdle   = errors.New("request body idle timeout")
	errUpstreamIdle = errors.New("upstream idle timeout: no response progress, or the request body not taken")
)

// bodyAborted handles a response body that could not be relayed whole:
// the client connection is aborted so it cannot take the truncated body
// for a complete one.
func (x *exchange) bodyAborted(err error) {
	x.w.w.Abort()
	switch {
	case err == errClientWrite || x.in.Context().Err() != nil:
		x.outcome = upstream.Abandoned
	case x.tap != nil && x.tap.exceeded():
		// The body limit cut the upload while the response streamed.
		x.outcome = upstream.Abandoned
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "request body too large",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
			slog.String("server", x.server.Addr), slog.Int64("max_body_bytes", x.tap.limit),
			slog.String("error", "response already started: connection closed"))
	default:
		x.outcome, x.errKind = upstream.Failure, errAborted
		if c := x.cancel.Cause(); c != nil {
			err = c
		}
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "upstream response aborted",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
			slog.String("server", x.server.Addr), slog.Any("error", err))
	}
}

// tunnel relays a 101: the response head goes to the client, then the
// front end carries bytes both ways until either side closes.
func (x *exchange) tunnel() {
	resp := &x.resp
	x.respHdr = appendEndToEnd(x.respHdr[:0], resp.Header, false)
	x.respHdr = append(x.respHdr, httpmsg.Field{Name: "Upgrade", Value: resp.Header.Get("Upgrade")})
	x.respHdr = x.sticky(applyHeaders(x.respHdr, x.rt.chain.respHeader))
	if err := x.w.WriteHead(101, x.respHdr, 0); err != nil {
		resp.Conn.Close()
		x.outcome = upstream.Abandoned
		return
	}
	up := x.r.tunnels.track(resp.Conn, tunnelKey{x.rt.name, x.rt.upstream, x.server.Addr})
	if err := x.w.w.Tunnel(up, resp.Pre); err != nil {
		x.outcome = upstream.Abandoned
		x.r.log.LogAttrs(context.Background(), slog.LevelDebug, "tunnel refused",
			slog.String("route", x.rt.name), slog.Any("error", err))
	}
}

// sticky adds the affinity cookie of a sticky pool when the request did
// not carry a valid pin to the server that answered.
func (x *exchange) sticky(h httpmsg.Header) httpmsg.Header {
	if c := x.rt.pool.StickyCookie(x.in, x.server); c != "" {
		h = append(h, httpmsg.Field{Name: "Set-Cookie", Value: c})
	}
	return h
}

func isEventStream(h httpmsg.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= 17 && httpmsg.EqualFold(ct[:17], "text/event-stream")
}

// proxyError answers a failed exchange: 502 when the server could not be
// reached or answered badly, 504 on a connect, response-header or idle
// timeout, 408 when the client stalled its body, 413 when the body grew
// past the listener's limit. The client only sees the status text; the
// cause goes to the error log. A client that went away gets nothing and is
// logged at Debug with status 499.
func (x *exchange) proxyError(err error) {
	code, outcome := classify(x.in.Context(), x.cancel.Cause(), err, x.tap)
	x.outcome = outcome
	if outcome == upstream.Failure {
		x.errKind = errKindOf(code, err)
	}
	level, msg := slog.LevelWarn, "upstream request failed"
	var le *upstream.LimitError
	if errors.As(err, &le) {
		msg = "upstream limit reached"
		x.countLimit(le.Limit)
	}
	switch code {
	case statusClientClosed:
		level = slog.LevelDebug
		x.status = code
	case 413:
		msg = "request body too large"
	case 400, 408:
		// The client's body broke or stalled: its fault, not the server's.
		level, msg = slog.LevelInfo, "request body failed"
	}
	server := "" // none yet when the body failed before a server was picked
	if x.server != nil {
		server = x.server.Addr
	}
	x.r.log.LogAttrs(context.Background(), level, msg,
		slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
		slog.String("server", server), slog.Int("status", code), slog.Any("error", err))
	switch code {
	case statusClientClosed:
	case 413:
		x.tooLarge()
	default:
		x.plainError(code)
	}
}

func classify(in context.Context, cause, err error, tap *bodyTap) (int, upstream.Outcome) {
	// The idle causes come first: the read deadline that ends a stalled
	// request body also fails the body read.
	switch cause {
	case errClientIdle:
		return 408, upstream.Abandoned
	case errUpstreamIdle:
		return 504, upstream.Failure
	}
	if tap != nil && tap.exceeded() {
		return 413, upstream.Abandoned
	}
	if in.Err() != nil {
		return statusClientClosed, upstream.Abandoned
	}
	var le *upstream.LimitError
	if errors.As(err, &le) {
		return 503, upstream.Abandoned // the pool is busy, not the server
	}
	if errors.Is(err, upstream.ErrBodyPanic) {
		return 500, upstream.Abandoned // edgeway's own fault, reported where it panicked
	}
	var be *upstream.BodyError
	if errors.As(err, &be) {
		// The client's body broke (reset, bad framing): its fault.
		return 400, upstream.Abandoned
	}
	var re *upstream.RequestError
	if errors.As(err, &re) {
		// Refused before a byte was sent (a field HTTP/1.1 cannot carry,
		// an upgrade an h2c pool cannot carry): never the server's fault.
		return re.Status, upstream.Abandoned
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return 504, upstream.Failure
	}
	// A connect or response-header timeout is 504; any other failure of
	// the upstream (refused, reset, closed, malformed answer) is 502.
	var ue *upstream.Error
	if errors.As(err, &ue) {
		if ue.Kind == upstream.KindRequest {
			// The request cannot be written as HTTP/1.1 (a method,
			// target, host or field the front end let through): the
			// client's mistake, never the server's.
			return 400, upstream.Abandoned
		}
		if ue.Timeout() {
			return 504, upstream.Failure
		}
		return 502, upstream.Failure
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return 504, upstream.Failure
	}
	return 502, upstream.Failure
}

// errKindOf names an upstream failure for the metrics.
func errKindOf(code int, err error) int {
	var ue *upstream.Error
	switch {
	case code == 504:
		return errTimeout
	case errors.As(err, &ue) && ue.Kind == upstream.KindConnect:
		return errConnect
	}
	return errResponse
}

// bufferPool lends 32 KiB copy buffers. Pointers to arrays go into the
// sync.Pool so that Put does not allocate.
type bufferPool struct{ p sync.Pool }

const bufSize = 32 << 10

var buffers = &bufferPool{}

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[bufSize]byte); ok {
		return v[:]
	}
	return new([bufSize]byte)[:]
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) >= bufSize {
		b.p.Put((*[bufSize]byte)(buf[:bufSize]))
	}
}

// retryable decides whether a failed try is tried again on another server
// (conf.Retry): never for a request with a body, a client that went away
// or stalled, or beyond the attempts and the pool's retry budget; after a
// connect failure (nothing was sent), a reset before any response byte of
// an idempotent request, or a configured 5xx status of an idempotent
// request. A status that is retried is discarded: its body is closed.
func (x *exchange) retryable(try int, err error) bool {
	pol := x.rt.pool.Retry()
	if try >= pol.Attempts || (err == nil && !slices.Contains(pol.Statuses, x.resp.Status)) {
		return false // the common case: an answer that is not retried
	}
	if (x.out.Body != nil && x.kept == nil) || x.in.Context().Err() != nil || x.cancel.Cause() != nil {
		return false
	}
	idem := idempotent(x.in.Method)
	switch {
	case err == nil:
		if !idem {
			return false
		}
	case upstream.IsConnectError(err):
		if !pol.ConnectFailure {
			return false
		}
	case !pol.Reset || !idem || !isReset(err):
		return false
	}
	if !x.retrying {
		if !x.rt.pool.StartRetry() {
			x.countLimit("retry_budget")
			return false
		}
		x.retrying = true
	}
	if err == nil && x.resp.Body != nil {
		x.resp.Body.Close()
	}
	if x.kept != nil {
		// A fresh reader behind a fresh gate: the failed try's body
		// writer may still hold the old one, whose gate is closed (a
		// bytes.Reader never blocks, so this waits for a copy at most).
		x.gate.close(nil)
		x.gate = &bodyGate{r: bytes.NewReader(x.kept)}
		x.out.Body = x.gate
	}
	return true
}

// keepBody reads a request body of at most limit bytes whole, so that a
// failed try can send it again (x.kept). A longer body streams: what was
// read goes out in front of the rest and the request is not retried. An
// error is the client's (its body broke, stalled or passed the listener's
// limit).
func (x *exchange) keepBody(limit int64) error {
	if x.in.ContentLength > limit {
		return nil
	}
	buf := x.bodyBuf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, min(limit+1, 32<<10))
	}
	for int64(len(buf)) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := x.out.Body.Read(buf[len(buf):min(cap(buf), int(limit)+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			x.bodyBuf, x.kept = buf, buf
			x.out.Body = bytes.NewReader(buf)
			return nil
		}
		if err != nil {
			x.bodyBuf = buf
			return err
		}
	}
	x.bodyBuf = buf
	x.out.Body = io.MultiReader(bytes.NewReader(buf), x.out.Body)
	return nil
}

// isReset reports an upstream read failure that is not a timeout: the
// connection was reset or closed before a response.
func isReset(err error) bool {
	var ue *upstream.Error
	return errors.As(err, &ue) && ue.Kind == upstream.KindRead && !ue.Timeout()
}

func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE":
		return true
	}
	return false
}

// endTry reports a try that is retried to its server, the log and the
// metrics.
func (x *exchange) endTry(err error) {
	status, cause := x.resp.Status, "status"
	if err != nil {
		status, cause = 0, err.Error()
	}
	x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "upstream request failed; retrying",
		slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
		slog.String("server", x.server.Addr), slog.Int("status", status), slog.String("error", cause))
	kind := -1
	if err != nil {
		kind = errKindOf(0, err)
	}
	x.server.Done(upstream.Result{Outcome: upstream.Failure, Status: status,
		ConnectFailed: upstream.IsConnectError(err), Latency: time.Since(x.upStart)})
	x.countTry(kind, status)
	x.countRetry()
	x.serverDone = true // reported; kept for the log of a last failure
}
