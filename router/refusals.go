package router

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// maxRefusalLines bounds the access-log lines written for refusals each
// second: a flood of bad requests is counted whole, but logged in part.
const maxRefusalLines = 20

// refusalLog is the per-second budget of refusal lines.
type refusalLog struct {
	second     atomic.Int64 // the Unix second the budget is for
	lines      atomic.Int64 // lines written in it
	suppressed atomic.Int64 // lines not written since the last one that was
}

// take reports whether a line may be written now, and how many were
// suppressed before it.
func (l *refusalLog) take(now time.Time) (bool, int64) {
	sec := now.Unix()
	if old := l.second.Load(); old != sec && l.second.CompareAndSwap(old, sec) {
		l.lines.Store(0)
	}
	if l.lines.Add(1) > maxRefusalLines {
		l.suppressed.Add(1)
		return false, 0
	}
	return true, l.suppressed.Swap(0)
}

// Refused records a request or connection a listener refused itself
// (listeners.Options.Refused): one access-log line with its reason (at
// most maxRefusalLines a second; the next line written says how many were
// left out) and one count in edgeway_requests_refused_total. A refusal is
// the client's: it never counts against an upstream.
func (r *Router) Refused(ref httpmsg.Refusal) {
	if m := r.metrics; m != nil {
		m.refused.WithLabelValues(ref.Listener, ref.Protocol, ref.Reason).Inc()
		if _, ok := m.refusedSeen.Load(ref.Listener); !ok {
			m.refusedSeen.Store(ref.Listener, true)
		}
	}
	ctx := context.Background()
	if r.access == nil || !r.access.Enabled(ctx, slog.LevelInfo) { // nil: `access off`
		return
	}
	ok, suppressed := r.refusals.take(time.Now())
	if !ok {
		return
	}
	r.access.LogAttrs(ctx, slog.LevelInfo, "refused", refusalAttrs(ref, suppressed)...)
}

// refusalAttrs are a refusal line's fields. status is left out when none
// was sent (Status 0: a connection refused before HTTP, a reset
// stream), so that no line claims a status the client never saw; client
// is left out when unknown.
func refusalAttrs(ref httpmsg.Refusal, suppressed int64) []slog.Attr {
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("listener", ref.Listener), slog.String("protocol", ref.Protocol))
	if ref.Remote.IsValid() {
		attrs = append(attrs, slog.String("client", ref.Remote.String()))
	}
	if ref.Status != 0 {
		attrs = append(attrs, slog.Int("status", ref.Status))
	}
	attrs = append(attrs, slog.String("reason", ref.Reason))
	if suppressed > 0 {
		attrs = append(attrs, slog.Int64("suppressed", suppressed))
	}
	return attrs
}
