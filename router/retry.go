package router

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/edgeway/edgeway/upstream"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// retryable decides whether a failed try is tried again on another server
// (conf.Retry): never for a request with a body, a client that went away
// or stalled, or beyond the attempts and the pool's retry budget; after a
// connect failure (nothing was sent), a reset before any response byte of
// an idempotent request, or a configured 5xx status of an idempotent
// request. A status that is retried is discarded: its body is closed.
func (x *exchange) retryable(try int, err error) bool {
	pol := x.retryPolicy()
	if try >= pol.Attempts || (err == nil && !slices.Contains(pol.Statuses, x.resp.Status)) {
		return false // the common case: an answer that is not retried
	}
	if (x.out.Body != nil && x.kept == nil && x.bufState != bufWhole) || x.in.Context().Err() != nil || x.cancel.Cause() != nil {
		return false
	}
	idem := idempotent(x.in.Method)
	switch {
	case err == nil:
		if !idem {
			return false
		}
	case httpclient.IsConnectError(err):
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
	if x.gate != nil && (x.kept != nil || x.bufState == bufWhole) {
		// A fresh reader behind a fresh gate: the failed try's body
		// writer may still hold the old one, whose gate is closed (a
		// buffered body's reader never blocks, so this waits for a copy
		// at most).
		x.gate.close(nil)
		x.gate = &bodyGate{r: x.replay()}
		x.out.Body = x.gate
	}
	return true
}

// replay returns a reader of the whole body from its start: the kept
// retry buffer, or the buffered body.
func (x *exchange) replay() io.Reader {
	if x.kept != nil {
		return bytes.NewReader(x.kept)
	}
	r := x.body.NewReader()
	return &r
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
	var ue *httpclient.Error
	return errors.As(err, &ue) && ue.Kind == httpclient.KindRead && !ue.Timeout()
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
		ConnectFailed: httpclient.IsConnectError(err), Latency: time.Since(x.upStart)})
	x.countTry(kind, status)
	x.countRetry()
	x.serverDone = true // reported; kept for the log of a last failure
}
