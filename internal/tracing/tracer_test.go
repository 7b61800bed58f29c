package tracing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestDecideAgreesWithSDK holds Decide's root decision to the SDK's
// TraceIDRatioBased, so that a span Decide samples is one the SDK
// records, and the share is the configured one.
func TestDecideAgreesWithSDK(t *testing.T) {
	t.Parallel()
	for _, ratio := range []float64{0, 0.01, 0.3, 0.5, 1} {
		tr, err := New(Options{Sample: ratio, Exporter: tracetest.NewNoopExporter()})
		if err != nil {
			t.Fatal(err)
		}
		sdk := sdktrace.TraceIDRatioBased(ratio)
		const n = 20000
		sampled := 0
		for range n {
			c := tr.Decide(SpanContext{}, false, false)
			want := sdk.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: c.TraceID}).Decision == sdktrace.RecordAndSample
			if c.Sampled() != want {
				t.Fatalf("ratio %v, trace %x: Decide %v, SDK %v", ratio, c.TraceID, c.Sampled(), want)
			}
			if c.Sampled() {
				sampled++
			}
		}
		if got := float64(sampled) / n; got < ratio-0.02 || got > ratio+0.02 {
			t.Errorf("ratio %v: sampled %v", ratio, got)
		}
		tr.Shutdown(context.Background())
	}
}

// TestDecideParent: a trusted parent's flag decides whatever the ratio,
// an untrusted one's the ratio does; the hop keeps the parent's trace and
// has a new span-id.
func TestDecideParent(t *testing.T) {
	t.Parallel()
	p, _ := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	for _, tt := range []struct {
		desc      string
		ratio     float64
		flags     byte
		untrusted bool
		expect    bool
	}{
		{desc: "sampled parent at 0%", ratio: 0, flags: 1, expect: true},
		{desc: "unsampled parent at 100%", ratio: 1, flags: 0, expect: false},
		{desc: "untrusted sampled parent at 0%", ratio: 0, flags: 1, untrusted: true, expect: false},
		{desc: "untrusted unsampled parent at 100%", ratio: 1, flags: 0, untrusted: true, expect: true},
	} {
		tr, err := New(Options{Sample: tt.ratio, Exporter: tracetest.NewNoopExporter()})
		if err != nil {
			t.Fatal(err)
		}
		p.Flags = tt.flags
		c := tr.Decide(p, true, !tt.untrusted)
		if c.Sampled() != tt.expect || c.TraceID != p.TraceID || c.SpanID == p.SpanID {
			t.Errorf("%s: %+v", tt.desc, c)
		}
		tr.Shutdown(context.Background())
	}
}

func TestDecideAllocs(t *testing.T) {
	tr, err := New(Options{Sample: 0.5, Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	if n := testing.AllocsPerRun(100, func() { tr.Decide(SpanContext{}, false, false) }); n != 0 {
		t.Errorf("%v allocations per Decide, want 0", n)
	}
}

// blockingExporter holds every export until release is closed, as a
// collector that does not answer would.
type blockingExporter struct {
	release chan struct{}
	once    sync.Once
	started chan struct{}
	fail    bool
}

func (e *blockingExporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	e.once.Do(func() { close(e.started) })
	select {
	case <-e.release:
	case <-ctx.Done():
	}
	if e.fail {
		return errors.New("collector down")
	}
	return nil
}

func (e *blockingExporter) Shutdown(context.Context) error { return nil }

// TestQueueFullDrops: with the exporter stuck, spans past the queue are
// dropped and counted, and ending a span never waits.
func TestQueueFullDrops(t *testing.T) {
	t.Parallel()
	exp := &blockingExporter{release: make(chan struct{}), started: make(chan struct{}), fail: true}
	tr, err := New(Options{Sample: 1, Exporter: exp, QueueSize: 4, BatchTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := func() trace.Span {
		c := tr.Decide(SpanContext{}, false, false)
		_, s := tr.Start(c, SpanContext{}, false, "", time.Now(), "GET")
		return s
	}
	start().End()
	<-exp.started // the first batch is stuck in the exporter, holding one place
	for range 10 {
		start().End()
	}
	st := tr.Stats()
	if st.QueueFull != 7 {
		t.Errorf("queue_full %d, want 7 (4 places, one held by the stuck export)", st.QueueFull)
	}
	close(exp.release)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if st := tr.Stats(); st.ExportFailed != 4 || st.Exported != 0 {
		t.Errorf("stats after shutdown %+v, want 4 export failures", st)
	}
}

// TestStartIDs: a sampled root span takes the trace-id Decide chose, and
// a child span the parent's trace with the parent as remote parent.
func TestStartIDs(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(Options{Sample: 1, Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Decide(SpanContext{}, false, false)
	out, s := tr.Start(c, SpanContext{}, false, "", time.Now(), "GET")
	s.End()
	p, _ := ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	c2 := tr.Decide(p, true, true)
	out2, s2 := tr.Start(c2, p, true, "a=1,b=2", time.Now(), "GET")
	s2.End()
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ss := exp.GetSpans()
	if len(ss) != 2 {
		t.Fatalf("%d spans", len(ss))
	}
	if out.TraceID != c.TraceID || !out.Sampled() || ss[0].SpanContext.SpanID() != trace.SpanID(out.SpanID) || ss[0].Parent.SpanID().IsValid() {
		t.Errorf("root: decided %+v, started %+v, exported %+v", c, out, ss[0].SpanContext)
	}
	if out2.TraceID != p.TraceID || ss[1].Parent.SpanID() != trace.SpanID(p.SpanID) || !ss[1].Parent.IsRemote() ||
		ss[1].SpanContext.TraceState().String() != "a=1,b=2" {
		t.Errorf("child: %+v parent %+v state %q", out2, ss[1].Parent, ss[1].SpanContext.TraceState())
	}
	tr.Shutdown(context.Background())
}
