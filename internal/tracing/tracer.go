package tracing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Options configures a Tracer.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP traces URL
	// (conf.Tracing.OTLP). Ignored when Exporter is set.
	Endpoint string
	// Sample is the share of new traces sampled, 0 to 1 (conf.Tracing.Sample).
	Sample float64
	// ServiceName and ServiceVersion are the service.name and
	// service.version resource attributes; "" leaves one out.
	ServiceName, ServiceVersion string
	// Log receives export failures (Warn, at most one line per
	// warnEvery). Nil discards them.
	Log *slog.Logger
	// Exporter, when not nil, replaces the OTLP exporter (tests and
	// benchmarks).
	Exporter sdktrace.SpanExporter
	// QueueSize bounds the spans ended but not yet exported; past it a
	// span is dropped and counted. Zero is DefaultQueueSize.
	QueueSize int
	// BatchTimeout is the longest a span waits for its batch to fill
	// before it is sent. Zero is the SDK's default: the environment's
	// OTEL_BSP_SCHEDULE_DELAY (milliseconds), else 5 s.
	BatchTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultQueueSize = 2048
	// maxBatch is the most spans one export request carries.
	maxBatch = 512
	// exportTimeout bounds one export, retries included.
	exportTimeout = 10 * time.Second
	// warnEvery is the least time between two export-failure warnings.
	warnEvery = 30 * time.Second
)

// Tracer starts edgeway's spans and exports them. Its methods are safe
// for concurrent use; nil is not a valid Tracer (the router checks for
// nil instead: tracing off).
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	sample   float64
	bound    uint64 // root decision: sampled when the trace-id's low 63 bits < bound
	log      *slog.Logger
	now      func() time.Time

	limit        int64
	queued       atomic.Int64 // ended, not yet exported or failed
	exported     atomic.Uint64
	queueFull    atomic.Uint64
	exportFailed atomic.Uint64
	lastWarn     atomic.Int64 // unix nanoseconds of the last export warning
}

// New returns a Tracer exporting to o.Endpoint (or o.Exporter). Nothing
// is sent until a sampled span ends; a collector that cannot be reached
// is reported when an export fails, not here.
func New(o Options) (*Tracer, error) {
	t := &Tracer{sample: o.Sample, log: o.Log, now: time.Now, limit: int64(o.QueueSize)}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.limit <= 0 {
		t.limit = DefaultQueueSize
	}
	if o.Sample < 0 || o.Sample > 1 || o.Sample != o.Sample {
		return nil, fmt.Errorf("sample %v is not a share from 0 to 1", o.Sample)
	}
	// TraceIDRatioBased's threshold, computed as the SDK does, so that
	// sampledRoot and the SDK's sampler always agree.
	t.bound = uint64(o.Sample * (1 << 63))
	exp := o.Exporter
	if exp == nil {
		var err error
		exp, err = otlptracehttp.New(context.Background(),
			otlptracehttp.WithEndpointURL(o.Endpoint),
			otlptracehttp.WithTimeout(exportTimeout/2),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true,
				InitialInterval: 500 * time.Millisecond, MaxInterval: 2 * time.Second, MaxElapsedTime: exportTimeout}))
		if err != nil {
			return nil, fmt.Errorf("creating the OTLP exporter: %w", err)
		}
	}
	bspOpts := []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxQueueSize(int(t.limit)),
		sdktrace.WithMaxExportBatchSize(min(maxBatch, int(t.limit))), sdktrace.WithExportTimeout(exportTimeout)}
	if o.BatchTimeout > 0 {
		bspOpts = append(bspOpts, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	bsp := sdktrace.NewBatchSpanProcessor(&countingExporter{next: exp, t: t}, bspOpts...)
	var attrs []attribute.KeyValue
	if o.ServiceName != "" {
		attrs = append(attrs, attribute.String("service.name", o.ServiceName))
	}
	if o.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", o.ServiceVersion))
	}
	t.provider = sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(o.Sample))),
		sdktrace.WithSpanProcessor(&gate{next: bsp, t: t}),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	t.tracer = t.provider.Tracer("github.com/edgeway/edgeway/router", trace.WithInstrumentationVersion(o.ServiceVersion))
	return t, nil
}

// Decide makes the sampling decision for a request whose incoming
// context is parent (hasParent: it had a valid traceparent), by the rule
// of the SDK's ParentBased(TraceIDRatioBased(Sample)): a parent's sampled
// flag decides; without a parent, a new random trace-id is sampled when
// its low 63 bits fall under the ratio. A parent whose flag is not
// trusted (trustFlag false: it came from a client, not a trusted proxy)
// keeps its trace-id but is decided by the ratio on that id, so that a
// client cannot have every one of its requests traced. It returns
// edgeway's hop: the parent's trace-id (or the new one), a new span-id
// and the decision in the sampled flag. It allocates nothing.
func (t *Tracer) Decide(parent SpanContext, hasParent, trustFlag bool) SpanContext {
	c := SpanContext{TraceID: parent.TraceID}
	sampled := parent.Sampled()
	switch {
	case !hasParent:
		c.TraceID = newTraceID()
		sampled = t.sampledRoot(c.TraceID)
	case !trustFlag:
		sampled = t.sampledRoot(c.TraceID)
	}
	binary.BigEndian.PutUint64(c.SpanID[:], nonZero())
	if sampled {
		c.Flags = FlagSampled
	}
	return c
}

// sampledRoot is TraceIDRatioBased's decision for a new trace.
func (t *Tracer) sampledRoot(id [16]byte) bool {
	switch {
	case t.sample >= 1:
		return true
	case t.sample <= 0:
		return false
	}
	return binary.BigEndian.Uint64(id[8:])>>1 < t.bound
}

// Start starts the server span of a request Decide sampled (c), at
// start, with parent as its remote parent when hasParent (tracestate is
// the parent's raw tracestate, kept on the span when it is valid). It
// returns the span and the context to send upstream: c's trace and
// flags with the span's own id.
func (t *Tracer) Start(c, parent SpanContext, hasParent bool, tracestate string, start time.Time,
	name string, attrs ...attribute.KeyValue) (SpanContext, trace.Span) {
	ctx := context.Background()
	if hasParent {
		ts, _ := trace.ParseTraceState(tracestate) // an invalid one is left out (§3.3.1.3)
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: parent.TraceID, SpanID: parent.SpanID, TraceFlags: trace.TraceFlags(parent.Flags) & trace.FlagsSampled,
			TraceState: ts, Remote: true,
		}))
	} else {
		// A parent with only a trace-id: the SDK takes the trace-id
		// Decide sampled and makes a root span (no parent span-id).
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: c.TraceID}))
	}
	_, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	sc := span.SpanContext()
	out := SpanContext{TraceID: sc.TraceID(), SpanID: sc.SpanID(), Flags: byte(sc.TraceFlags()) & FlagSampled}
	return out, span
}

// Shutdown exports what is queued and stops the exporter, waiting until
// ctx ends at the latest; the spans it could not send by then are
// reported as lost.
func (t *Tracer) Shutdown(ctx context.Context) error {
	err := t.provider.Shutdown(ctx)
	if n := t.queued.Load(); n > 0 {
		err = errors.Join(err, fmt.Errorf("%d spans not exported at shutdown", n))
	}
	if err != nil {
		return fmt.Errorf("shutting down tracing: %w", err)
	}
	return nil
}

// ForceFlush exports the spans ended so far, waiting until ctx ends at
// the latest.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if err := t.provider.ForceFlush(ctx); err != nil {
		return fmt.Errorf("flushing spans: %w", err)
	}
	return nil
}

// Stats are the span counters since New.
type Stats struct {
	Exported     uint64 // sent to the collector
	QueueFull    uint64 // dropped: the queue was full (collector slow or down)
	ExportFailed uint64 // dropped: their export failed (after retries)
}

// Stats returns the span counters.
func (t *Tracer) Stats() Stats {
	return Stats{Exported: t.exported.Load(), QueueFull: t.queueFull.Load(), ExportFailed: t.exportFailed.Load()}
}

// newTraceID is a random, non-zero trace-id from the runtime's per-thread
// generator (no lock, no allocation).
func newTraceID() [16]byte {
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], rand.Uint64())
	binary.BigEndian.PutUint64(id[8:], nonZero())
	return id
}

func nonZero() uint64 {
	for {
		if v := rand.Uint64(); v != 0 {
			return v
		}
	}
}
