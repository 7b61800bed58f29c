// Package panics contains a panic at the boundary where edgeway serves one
// request, stream, connection or background task: the panic is recovered,
// logged at ERROR with its stack, counted in edgeway_panics_total by where
// it was caught, and only that unit of work ends. Every goroutine edgeway
// starts runs under Recover (goroutines_test.go checks the source), and so
// does every function of ours that another package's goroutine calls (the
// request body readers that x/net's HTTP/2 client writer drives).
//
// The logger and the counter are process-wide: a panic is a fault of the
// process, whichever part it happened in. SetLogger points the reports at
// the daemon's error log; until then they go to slog.Default.
package panics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var (
	logger atomic.Pointer[slog.Logger]
	total  = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "edgeway_panics_total",
		Help: "Panics recovered, by where they were caught; each ended only its request, stream, connection or task.",
	}, []string{"where"})
)

// SetLogger makes l the log that panics are reported to (nil:
// slog.Default).
func SetLogger(l *slog.Logger) { logger.Store(l) }

// Collector is the edgeway_panics_total counter, for a metrics registry.
func Collector() prometheus.Collector { return total }

// Count returns how many panics were recovered at where.
func Count(where string) float64 {
	var m dto.Metric
	if err := total.WithLabelValues(where).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// Report logs v, a recovered panic value, at ERROR with the stack of the
// goroutine that panicked, and counts it under where. Call it from the
// deferred function that recovered v, so that the stack still shows where
// the panic happened.
func Report(where string, v any, attrs ...slog.Attr) {
	total.WithLabelValues(where).Inc()
	l := logger.Load()
	if l == nil {
		l = slog.Default()
	}
	attrs = append(attrs, slog.String("where", where), slog.String("panic", fmt.Sprint(v)),
		slog.String("stack", string(debug.Stack())))
	l.LogAttrs(context.Background(), slog.LevelError, "panic recovered", attrs...)
}

// IsAbort reports whether v is http.ErrAbortHandler, the panic value of
// an intended abort (net/http and edgeway's front ends close the
// connection or reset the stream, and log nothing).
func IsAbort(v any) bool {
	err, ok := v.(error)
	return ok && errors.Is(err, http.ErrAbortHandler)
}

// Recover, deferred, stops a panic and reports it (not an intended
// abort): `defer panics.Recover("health check")`.
func Recover(where string) {
	if v := recover(); v != nil && !IsAbort(v) {
		Report(where, v)
	}
}

// Go runs fn on a new goroutine under Recover.
func Go(where string, fn func()) {
	go func() {
		defer Recover(where)
		fn()
	}()
}
