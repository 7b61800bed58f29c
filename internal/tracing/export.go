package tracing

import (
	"context"
	"log/slog"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The SDK's batch processor drops a span when its queue is full but
// keeps the count to itself. gate and countingExporter keep the count
// instead: gate admits a span only while fewer than the queue's size are
// waiting (so the processor's own queue never fills, and never drops
// uncounted), and countingExporter releases them when their export ends,
// counting those that failed.

// gate is a SpanProcessor in front of the batch processor.
type gate struct {
	next sdktrace.SpanProcessor
	t    *Tracer
}

func (g *gate) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) { g.next.OnStart(ctx, s) }

// OnEnd queues s, or drops and counts it when the queue is full: it
// never waits.
func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if g.t.queued.Add(1) > g.t.limit {
		g.t.queued.Add(-1)
		g.t.queueFull.Add(1)
		return
	}
	g.next.OnEnd(s)
}

func (g *gate) Shutdown(ctx context.Context) error   { return g.next.Shutdown(ctx) }
func (g *gate) ForceFlush(ctx context.Context) error { return g.next.ForceFlush(ctx) }

// countingExporter counts each batch's outcome. A failed batch is
// counted, logged (at most once per warnEvery) and not handed back to
// the SDK, whose global error handler would print it to stderr.
type countingExporter struct {
	next sdktrace.SpanExporter
	t    *Tracer
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.next.ExportSpans(ctx, spans)
	n := len(spans)
	e.t.queued.Add(-int64(n))
	if err == nil {
		e.t.exported.Add(uint64(n))
		return nil
	}
	e.t.exportFailed.Add(uint64(n))
	e.t.warnExport(err, n)
	return nil
}

func (e *countingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// warnExport logs a failed export unless one was logged less than
// warnEvery ago; the counters hold every failure.
func (t *Tracer) warnExport(err error, n int) {
	now := t.now().UnixNano()
	last := t.lastWarn.Load()
	if now-last < int64(warnEvery) || !t.lastWarn.CompareAndSwap(last, now) {
		return
	}
	t.log.LogAttrs(context.Background(), slog.LevelWarn, "trace export failed; spans dropped",
		slog.Int("spans", n), slog.Uint64("dropped_total", t.exportFailed.Load()+t.queueFull.Load()), slog.Any("err", err))
}

// Interface guards.
var (
	_ sdktrace.SpanProcessor = (*gate)(nil)
	_ sdktrace.SpanExporter  = (*countingExporter)(nil)
)
