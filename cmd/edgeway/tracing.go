package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/tracing"
)

// traceFlushTimeout bounds the export of the spans still queued at
// shutdown: a collector that is down delays the exit by at most this.
const traceFlushTimeout = 5 * time.Second

// newTracer starts tracing as the tracing block says; nil without one.
// The SDK's own errors (the few it does not return to edgeway) go to
// the error log rather than to stderr.
func newTracer(c *conf.Tracing, log *slog.Logger) (*tracing.Tracer, error) {
	if c == nil {
		return nil, nil
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing", "err", err) }))
	return tracing.New(tracing.Options{Endpoint: c.OTLP, Sample: c.Sample, ServiceName: c.ServiceName,
		ServiceVersion: version, Log: log})
}

// stopTracer flushes the queued spans within traceFlushTimeout.
func stopTracer(t *tracing.Tracer, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("tracing shutdown", "err", err)
		return
	}
	log.Info("tracing stopped", "spans_exported", t.Stats().Exported)
}

// traceCollectors export the tracer's span counters:
// edgeway_trace_spans_exported_total and
// edgeway_trace_spans_dropped_total{reason} (queue_full: the collector
// was slow or down and the queue full; export_failed: sent and refused,
// or not sent within the export timeout).
func traceCollectors(t *tracing.Tracer) []prometheus.Collector {
	dropped := func(reason string, n func(tracing.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "edgeway_trace_spans_dropped_total",
			Help:        "Spans not exported, by reason: queue_full (the collector slow or down), export_failed.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, func() float64 { return float64(n(t.Stats())) })
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "edgeway_trace_spans_exported_total",
			Help: "Spans sent to the OTLP collector.",
		}, func() float64 { return float64(t.Stats().Exported) }),
		dropped("queue_full", func(s tracing.Stats) uint64 { return s.QueueFull }),
		dropped("export_failed", func(s tracing.Stats) uint64 { return s.ExportFailed }),
	}
}
