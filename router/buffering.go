package router

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/bodybuf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/upstream"
)

// Request buffering (conf.Route.StreamRequestBody, conf.Buffers,
// conf.Listener.BodyTimeout).
//
// A request with a body is read whole on the handler's goroutine before a
// server is picked, into the exchange's bodybuf.Buffer: pooled memory
// chunks, then an unlinked temporary file, up to max_body_bytes. So a
// slow client holds a buffer, never a server's connection or worker.
// While it reads, every Read is bounded by a read deadline body_timeout
// ahead (the HTTP/1 front end removes the head's deadline when a body
// follows, and removes this one before it reads the next request; the
// HTTP/2 and HTTP/3 adapters keep the stream's own stall timeout under
// it): a client that sends nothing for that long gets 408 and, on HTTP/1,
// a closed connection. The first Read also answers `Expect: 100-continue`
// (the front ends send 100 Continue when the handler first reads), so the
// upstream never sees Expect: the body it gets is complete.
//
// The buffered body goes out with its length known (a chunked request is
// sent with Content-Length, unless it carried trailers), and every try
// reads it from the start: a retry resends it for free, whatever the
// retries block's body_buffer says.
//
// When the buffers' disk cap is reached (bodybuf.ErrFull), or a temporary
// file cannot be made, the request is not refused: it streams, what was
// read going first, exactly as with `request_buffering off`, and
// edgeway_buffer_overflow_total counts it. The caps protect the machine
// running edgeway; answering 503 there would fail uploads that edgeway
// can carry, in the moments when it is busiest, and the client would send
// the same bytes again. A streamed body is still bounded by the upstream's
// idle_timeout and max_body_bytes.
//
// Never buffered: gRPC (its client stream may wait for answers), a body
// of unknown length to an h2c upstream (streamsBody), and routes with
// `request_buffering off`. A request without a body takes nothing here.

// Buffer states of an exchange.
const (
	bufNone    = iota // the body (if any) streams
	bufWhole          // x.body holds all of it
	bufPartial        // x.body holds its start; the rest streams after it
)

// bodyTimeoutOf is the body timeout a listener enforces: the zero value
// means the default, a negative one none (returned as 0).
func bodyTimeoutOf(lc conf.Listener) time.Duration {
	switch t := lc.BodyTimeout; {
	case t == 0:
		return conf.DefaultBodyTimeout
	case t < 0:
		return 0
	default:
		return t
	}
}

// buffersBody reports whether the request body is read whole before a
// server is picked.
func (x *exchange) buffersBody() bool {
	in := x.in
	return in.Body != nil && in.ContentLength != 0 && !x.rt.streamBody &&
		!streamsBody(x.rt.pool, in) && !isGRPC(in.Header)
}

// isGRPC reports a gRPC request (Content-Type application/grpc, with or
// without a +suffix or parameters).
func isGRPC(h httpmsg.Header) bool {
	ct := h.Get("Content-Type")
	const g = "application/grpc"
	return len(ct) >= len(g) && httpmsg.EqualFold(ct[:len(g)], g) &&
		(len(ct) == len(g) || ct[len(g)] == '+' || ct[len(g)] == ';')
}

// bufferBody reads the request body into x.body. It reports false when
// the request was answered (413, 408, 400) or its client went away.
func (x *exchange) bufferBody() bool {
	x.body.Start(x.r.bufs)
	x.bufState = bufWhole
	timeout, limit := x.l.bodyTimeout, x.maxBody()
	err := x.readBody(timeout, limit)
	if timeout > 0 {
		_ = x.w.w.SetReadDeadline(time.Time{})
	}
	switch {
	case err == nil:
		return true
	case errors.Is(err, errBodyTooLarge):
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "request body too large",
			slog.String("route", x.rt.name), slog.Int64("max_body_bytes", limit))
		x.outcome = upstream.Abandoned
		x.tooLarge()
		return false
	case errors.Is(err, errBufferFull):
		x.overflow(err)
		return true
	}
	x.bodyFailed(err, timeout)
	return false
}

// errBufferFull wraps a bodybuf failure (the disk cap, a file that cannot
// be made or written): the body streams.
var errBufferFull = errors.New("request body buffer")

// errBodyTooSlow: a buffered body came slower than body_min_rate.
var errBodyTooSlow = errors.New("request body slower than body_min_rate")

// rateWindow measures a body's rate over windows of body_min_rate.
type rateWindow struct {
	rate  conf.MinRate
	start time.Time // of the window; zero: no minimum
	base  int64     // body bytes when it started
}

func (w *rateWindow) begin(rate conf.MinRate) {
	if w.rate = rate; rate.Bytes > 0 {
		w.start = time.Now()
	}
}

// check is called after each read, with the body's bytes so far: once a
// window has passed, it fails unless the window brought the minimum.
func (w *rateWindow) check(size int64) error {
	if w.start.IsZero() {
		return nil
	}
	now := time.Now()
	el := now.Sub(w.start)
	if el < w.rate.Window {
		return nil
	}
	if float64(size-w.base) < float64(w.rate.Bytes)*el.Seconds() {
		return errBodyTooSlow
	}
	w.start, w.base = now, size
	return nil
}

// readBody fills x.body until the body ends.
func (x *exchange) readBody(timeout time.Duration, limit int64) error {
	in, b := x.in, &x.body
	var rw rateWindow
	rw.begin(x.l.minRate)
	for {
		if in.ContentLength > 0 && b.Size() == in.ContentLength {
			// All of it: read the end without taking a chunk for it.
			n, err := in.Body.Read(x.eofProbe[:])
			if n == 0 && err == io.EOF {
				return nil
			}
			if err == nil {
				err = io.ErrUnexpectedEOF // longer than its length: the front end would not let it
			}
			return err
		}
		p, err := b.Space()
		if err != nil {
			return errors.Join(errBufferFull, err)
		}
		if timeout > 0 {
			_ = x.w.w.SetReadDeadline(time.Now().Add(timeout))
		}
		n, err := in.Body.Read(p)
		b.Commit(n)
		if limit > 0 && b.Size() > limit {
			return errBodyTooLarge
		}
		if err == nil {
			if err := rw.check(b.Size()); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// overflow turns a buffered request into a streamed one after a bodybuf
// failure: what was read goes first (buildOutbound).
func (x *exchange) overflow(err error) {
	x.bufState = bufPartial
	if !errors.Is(err, bodybuf.ErrFull) {
		x.r.log.LogAttrs(context.Background(), slog.LevelError, "request body buffer failed; streaming the body",
			slog.String("route", x.rt.name), slog.Any("error", err))
	}
}

// bodyFailed answers a body that broke while it was buffered: 408 when it
// stalled, nothing when the client went away, else 400. Nothing was
// forwarded, so no server is charged.
func (x *exchange) bodyFailed(err error, timeout time.Duration) {
	x.outcome = upstream.Abandoned
	slow := errors.Is(err, errBodyTooSlow)
	stalled := slow || (timeout > 0 && isTimeout(err))
	// A stalled body is answered even when the front end cancelled the
	// request's context for the failed read (net/http does).
	if !stalled && x.in.Context().Err() != nil {
		x.status = statusClientClosed
		x.r.log.LogAttrs(context.Background(), slog.LevelDebug, "request body failed",
			slog.String("route", x.rt.name), slog.Int("status", statusClientClosed), slog.Any("error", err))
		return
	}
	code := 400
	attrs := []slog.Attr{slog.String("route", x.rt.name), slog.Int64("received", x.body.Size())}
	switch {
	case slow:
		code = 408
		attrs = append(attrs, slog.String("timeout", "body_min_rate"), slog.Int64("body_min_rate", x.l.minRate.Bytes))
	case stalled:
		code = 408
		attrs = append(attrs, slog.String("timeout", "body_timeout"), slog.Duration("body_timeout", timeout))
	}
	attrs = append(attrs, slog.Int("status", code), slog.Any("error", err))
	x.r.log.LogAttrs(context.Background(), slog.LevelInfo, "request body failed", attrs...)
	x.writeText(code, errorBodies[code], true)
}

// isTimeout reports a read that a deadline ended.
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &te) && te.Timeout())
}

// bufferedOut sets x.out's body to the buffered one.
func (x *exchange) bufferedOut() {
	x.bodyRd = x.body.NewReader()
	x.out.Body = &x.bodyRd
	if x.in.ContentLength < 0 && (x.in.Trailer == nil || len(x.in.Trailer()) == 0) {
		x.out.ContentLength = x.body.Size() // trailers need chunked framing
	}
	if x.out.ContentLength == 0 {
		x.out.Body = nil
	}
	// The client was answered 100 Continue by the front end; the server
	// gets the whole body at once.
	x.outHdr = x.outHdr.Del("Expect")
	x.out.Header = x.outHdr
}

// releaseBody hands back the buffered body's memory and file; reuse is
// false when a reader of it may still run.
func (x *exchange) releaseBody(reuse bool) {
	if x.bufState != bufNone {
		x.body.Release(reuse)
	}
}
