package router

import (
	"context"
	"errors"
	"log/slog"
	"net"

	"github.com/edgeway/edgeway/upstream"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

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
	var le *httpclient.LimitError
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
	attrs := []slog.Attr{slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
		slog.String("server", server), slog.Int("status", code), slog.Any("error", err)}
	if setting := timeoutSetting(code, x.cancel.Cause(), err); setting != "" {
		attrs = append(attrs, slog.String("timeout", setting))
	}
	x.r.log.LogAttrs(context.Background(), level, msg, attrs...)
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
	var le *httpclient.LimitError
	if errors.As(err, &le) {
		return 503, upstream.Abandoned // the pool is busy, not the server
	}
	if errors.Is(err, httpclient.ErrBodyPanic) {
		return 500, upstream.Abandoned // edgeway's own fault, reported where it panicked
	}
	var be *httpclient.BodyError
	if errors.As(err, &be) {
		// The client's body broke (reset, bad framing): its fault.
		return 400, upstream.Abandoned
	}
	var re *httpclient.RequestError
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
	var ue *httpclient.Error
	if errors.As(err, &ue) {
		if ue.Kind == httpclient.KindRequest {
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

// timeoutSetting names the upstream block setting whose limit ended an
// exchange answered code (504s, and the client body's 408), so that the
// log says which to raise: "" when no timeout did.
func timeoutSetting(code int, cause, err error) string {
	var ue *httpclient.Error
	switch {
	case cause == errClientIdle, cause == errUpstreamIdle:
		return "idle_timeout"
	case code != 504:
		return ""
	case errors.As(err, &ue) && ue.Kind == httpclient.KindConnect:
		return "connect_timeout"
	}
	return "response_timeout"
}

// errKindOf names an upstream failure for the metrics.
func errKindOf(code int, err error) int {
	var ue *httpclient.Error
	switch {
	case code == 504:
		return errTimeout
	case errors.As(err, &ue) && ue.Kind == httpclient.KindConnect:
		return errConnect
	}
	return errResponse
}
