package router

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"github.com/edgeway/edgeway/upstream"
)

// forward proxies the request to a server of the route's pool.
//
// Streaming: FlushInterval is 0. ReverseProxy then flushes every write of a
// response whose length is unknown (chunked, streamed) or that is
// text/event-stream, so a stream is never held back; a response with a
// Content-Length goes out through the server's write buffer without a flush
// per write, which saves a write(2) per response on small answers.
func (x *exchange) forward() {
	if x.refuseLargeBody() {
		return
	}
	pool := x.rt.pool
	s, err := pool.Pick()
	if err != nil {
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "no upstream server",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream), slog.Any("error", err))
		x.plainError(http.StatusServiceUnavailable)
		return
	}
	x.server = s
	ctx, cancel := context.WithCancelCause(x.in.Context())
	x.octx, x.cancel = ctx, cancel
	gen := x.wd.start(x.w.w, cancel, pool.IdleTimeout())
	req := x.in.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength != 0 {
		x.tap = &bodyTap{rc: req.Body, wd: &x.wd, gen: gen, limit: x.l.maxBody}
		req.Body = x.tap
		x.wd.arm(gen, phaseUpload)
	}
	x.proxy.Transport = pool.Transport()
	x.proxy.ServeHTTP(&x.w, req)
}

// end reports the outcome to the server and releases the request's timer
// and context. It runs in finish, after ServeHTTP returned or panicked.
func (x *exchange) end() {
	x.wd.stop()
	if x.cancel != nil {
		x.cancel(nil)
	}
	if x.server != nil {
		x.server.Done(x.outcome)
	}
}

// aborted records why ReverseProxy aborted the response mid-body.
func (x *exchange) aborted(p any) {
	if x.in.Context().Err() != nil {
		x.outcome = upstream.Abandoned
		return
	}
	if x.tap != nil && x.tap.exceeded() {
		// The body limit cut the upload while the response streamed.
		x.outcome = upstream.Abandoned
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "request body too large",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
			slog.String("server", x.server.Addr), slog.Int64("max_body_bytes", x.tap.limit),
			slog.String("error", "response already started: connection closed"))
		return
	}
	x.outcome = upstream.Failure
	if x.rt != nil && x.server != nil {
		var cause error = errors.New("response body copy failed")
		if x.octx != nil && context.Cause(x.octx) != nil {
			cause = context.Cause(x.octx)
		}
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "upstream response aborted",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
			slog.String("server", x.server.Addr), slog.Any("error", cause), slog.Any("panic", p))
	}
}

// rewrite builds the outbound request. ReverseProxy has already removed
// hop-by-hop headers (RFC 9110 §7.6.1, including those named by
// Connection) and the incoming forwarding headers.
func (x *exchange) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme, out.URL.Host = "http", x.server.Addr
	if out.Host == "" {
		// An HTTP/1.0 request may come without Host; name the address
		// the client connected to rather than the upstream's own.
		if a, ok := pr.In.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			out.Host = a.String()
		}
	}
	if x.path != x.origPath {
		setEscapedPath(out.URL, x.path)
	}
	if x.query != pr.In.URL.RawQuery {
		out.URL.RawQuery = x.query
	}
	// Request trailers arrive when the body ends: share the inbound map,
	// which the server fills in then, instead of Clone's empty copy.
	out.Trailer = pr.In.Trailer
	x.setForwarded(out.Header, pr.In)
	applyHeaders(out.Header, x.rt.chain.reqHeader)
}

// setEscapedPath sets u's Path and RawPath consistently from an escaped
// path.
func setEscapedPath(u *url.URL, esc string) {
	if strings.IndexByte(esc, '%') < 0 {
		u.Path, u.RawPath = esc, ""
		return
	}
	p, err := url.PathUnescape(esc)
	if err != nil {
		p = esc
	}
	u.Path, u.RawPath = p, esc
}

func (x *exchange) modifyResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// The tunnel is ReverseProxy's from here; its body is the raw
		// backend connection and must stay unwrapped.
		x.status = http.StatusSwitchingProtocols
		x.tunnel = resp.Body
		return nil
	}
	applyHeaders(resp.Header, x.rt.chain.respHeader)
	if resp.Body != nil && resp.Body != http.NoBody {
		x.body = respBody{rc: resp.Body, wd: &x.wd, gen: x.wd.gen()}
		resp.Body = &x.body
		x.wd.arm(x.body.gen, phaseDownload)
	}
	return nil
}

var (
	errClientIdle   = errors.New("request body idle timeout")
	errUpstreamIdle = errors.New("upstream idle timeout: no response progress, or the request body not taken")
)

// proxyError answers a failed exchange: 502 when the server could not be
// reached or answered badly, 504 on a connect, response-header or idle
// timeout, 408 when the client stalled its body, 413 when the body grew
// past the listener's limit. The client only sees the status text; the
// cause goes to the error log. A client that went away gets nothing and is
// logged at Debug with status 499.
func (x *exchange) proxyError(w http.ResponseWriter, req *http.Request, err error) {
	if x.tunnel != nil {
		// ReverseProxy refused the 101 (a mismatched protocol, a client
		// connection it cannot hijack) without closing the upstream
		// connection it was handed.
		x.tunnel.Close()
		x.tunnel = nil
	}
	code, outcome := classify(x.in.Context(), req.Context(), err)
	x.outcome = outcome
	level, msg := slog.LevelWarn, "upstream request failed"
	switch code {
	case statusClientClosed:
		level = slog.LevelDebug
		x.status = code
	case http.StatusRequestEntityTooLarge:
		msg = "request body too large"
	}
	x.r.log.LogAttrs(context.Background(), level, msg,
		slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
		slog.String("server", x.server.Addr), slog.Int("status", code), slog.Any("error", err))
	switch code {
	case statusClientClosed:
	case http.StatusRequestEntityTooLarge:
		x.tooLarge(w)
	default:
		http.Error(w, http.StatusText(code), code)
	}
}

func classify(in, out context.Context, err error) (int, upstream.Outcome) {
	// The idle causes come first: the read deadline that ends a stalled
	// request body also makes the server cancel the inbound context.
	switch context.Cause(out) {
	case errClientIdle:
		return http.StatusRequestTimeout, upstream.Abandoned
	case errUpstreamIdle:
		return http.StatusGatewayTimeout, upstream.Failure
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return http.StatusRequestEntityTooLarge, upstream.Abandoned
	}
	if in.Err() != nil {
		return statusClientClosed, upstream.Abandoned
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout, upstream.Failure
	}
	// A connect or response-header timeout is 504; any other failure of
	// the upstream (refused, reset, closed, malformed answer) is 502.
	var ue *upstream.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return http.StatusGatewayTimeout, upstream.Failure
		}
		return http.StatusBadGateway, upstream.Failure
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return http.StatusGatewayTimeout, upstream.Failure
	}
	return http.StatusBadGateway, upstream.Failure
}

// bufferPool lends ReverseProxy 32 KiB copy buffers. Pointers to arrays go
// into the sync.Pool so that Put does not allocate.
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
