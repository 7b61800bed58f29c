package router

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/internal/tracing"
)

const (
	clientTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan   = "00f067aa0ba902b7"
	clientParent = "00-" + clientTrace + "-" + clientSpan + "-01"
)

// tracedFront is a router with a tracer at sample over an in-memory
// exporter, proxying to an upstream that echoes the fields it got.
func tracedFront(t *testing.T, sample float64, up string, trusted ...string) (*traced, string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(tracing.Options{Sample: sample, ServiceName: "edgeway", Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &conf.Config{Listeners: []conf.Listener{testListener(trusted...)},
		Upstreams: []conf.Upstream{testUpstream("u", []string{up})},
		Routes:    []conf.Route{testRoute(t, "api", "PathPrefix(`/`)", "u")}}
	access := &logSink{}
	_, s := front(t, cfg, Options{Tracer: tr, AccessLog: slog.New(access)})
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return &traced{tr: tr, exp: exp, access: access}, s.URL
}

// traced is a tracer, its exporter and the access log of its router.
type traced struct {
	tr     *tracing.Tracer
	exp    *tracetest.InMemoryExporter
	access *logSink
}

// spans waits for n requests to end (their access-log lines, written
// after the span ends), flushes the tracer and returns what it exported.
func (tt *traced) spans(t *testing.T, n int) tracetest.SpanStubs {
	t.Helper()
	testutil.WaitFor(t, "access log lines", func() bool { return tt.access.count("request") >= n })
	if err := tt.tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tt.exp.GetSpans()
}

// get sends a GET with the given fields and returns the traceparent and
// tracestate the upstream saw.
func get(t *testing.T, url string, fields ...string) (traceparent, tracestate string, status int) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(fields); i += 2 {
		req.Header.Add(fields[i], fields[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get("X-Got-Traceparent"), strings.Join(resp.Header.Values("X-Got-Tracestate"), ","), resp.StatusCode
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTracingOffPassesThrough(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "api", "PathPrefix(`/`)", "u")}}
	_, s := front(t, cfg, Options{})
	for _, tp := range []string{clientParent, "ff-garbage"} {
		got, state, _ := get(t, s.URL, "Traceparent", tp, "Tracestate", "k=v")
		if got != tp || state != "k=v" {
			t.Errorf("sent %q, k=v; upstream got %q, %q", tp, got, state)
		}
	}
}

// TestTracingParent: the upstream sees edgeway's span as its parent, in
// the client's trace, and the span has the client's span as its parent.
func TestTracingParent(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	tf, url := tracedFront(t, 0, addr(up), "127.0.0.0/8") // a trusted parent's sampled flag decides
	got, state, status := get(t, url+"/v1/x?q=1", "Traceparent", clientParent, "Tracestate", "vendor=1", "User-Agent", "test/1")
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	hop, ok := tracing.ParseTraceparent(got)
	if !ok || hex.EncodeToString(hop.TraceID[:]) != clientTrace || hex.EncodeToString(hop.SpanID[:]) == clientSpan || !hop.Sampled() {
		t.Fatalf("upstream got traceparent %q, want trace %s, a new parent-id, sampled", got, clientTrace)
	}
	if state != "vendor=1" {
		t.Errorf("upstream got tracestate %q, want vendor=1", state)
	}
	ss := tf.spans(t, 1)
	if len(ss) != 1 {
		t.Fatalf("%d spans exported, want 1", len(ss))
	}
	s := ss[0]
	if s.SpanContext.TraceID() != trace.TraceID(hop.TraceID) || s.SpanContext.SpanID() != trace.SpanID(hop.SpanID) {
		t.Errorf("span %v/%v, upstream's parent %x/%x", s.SpanContext.TraceID(), s.SpanContext.SpanID(), hop.TraceID, hop.SpanID)
	}
	if s.Parent.SpanID().String() != clientSpan || !s.Parent.IsRemote() || s.SpanKind != trace.SpanKindServer || s.Name != "GET" {
		t.Errorf("span parent %v remote %v kind %v name %q", s.Parent.SpanID(), s.Parent.IsRemote(), s.SpanKind, s.Name)
	}
	if s.SpanContext.TraceState().Get("vendor") != "1" {
		t.Errorf("span tracestate %q", s.SpanContext.TraceState())
	}
	a := attrs(s)
	want := map[attribute.Key]string{
		"http.request.method": "GET", "url.path": "/v1/x", "url.scheme": "http", "server.address": "127.0.0.1",
		"network.protocol.version": "1.1", "client.address": "127.0.0.1", "user_agent.original": "test/1",
		"edgeway.route": "api", "edgeway.upstream": "u", "edgeway.server": addr(up), "edgeway.listener": "web",
	}
	for k, v := range want {
		if a[k].Emit() != v {
			t.Errorf("%s = %q, want %q", k, a[k].Emit(), v)
		}
	}
	if a["http.response.status_code"].AsInt64() != 200 || a["edgeway.tries"].AsInt64() != 1 || a["server.port"].AsInt64() == 0 {
		t.Errorf("status %v tries %v port %v", a["http.response.status_code"], a["edgeway.tries"], a["server.port"])
	}
	if a["edgeway.request_id"].AsString() == "" || s.Status.Code != codes.Unset {
		t.Errorf("request_id %q status %v", a["edgeway.request_id"].AsString(), s.Status)
	}
}

// TestTracingInvalidParent: an invalid traceparent starts a new trace, as
// a missing one does, and its tracestate is dropped.
func TestTracingInvalidParent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ desc, tp string }{
		{desc: "absent"},
		{desc: "version ff", tp: "ff-" + clientTrace + "-" + clientSpan + "-01"},
		{desc: "zero trace-id", tp: "00-00000000000000000000000000000000-" + clientSpan + "-01"},
		{desc: "zero parent-id", tp: "00-" + clientTrace + "-0000000000000000-01"},
		{desc: "bad hex", tp: "00-" + clientTrace[:31] + "x-" + clientSpan + "-01"},
		{desc: "wrong length", tp: clientParent + "0"},
		{desc: "upper case", tp: strings.ToUpper(clientParent)},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			up := backend(t, "a")
			tf, url := tracedFront(t, 1, addr(up))
			fields := []string{"Tracestate", "k=v"}
			if tt.tp != "" {
				fields = append(fields, "Traceparent", tt.tp)
			}
			got, state, _ := get(t, url, fields...)
			hop, ok := tracing.ParseTraceparent(got)
			if !ok || hex.EncodeToString(hop.TraceID[:]) == clientTrace || !hop.Sampled() {
				t.Fatalf("upstream got traceparent %q, want a new sampled trace", got)
			}
			if state != "" {
				t.Errorf("upstream got tracestate %q, want none", state)
			}
			ss := tf.spans(t, 1)
			if len(ss) != 1 || ss[0].Parent.SpanID().IsValid() || ss[0].SpanContext.TraceID() != trace.TraceID(hop.TraceID) ||
				ss[0].SpanContext.SpanID() != trace.SpanID(hop.SpanID) {
				t.Fatalf("spans %+v, want one root span of the trace %x", ss, hop.TraceID)
			}
		})
	}
}

// TestTracingNotSampled: at 0%, or under an unsampled parent, no span is
// made, but the upstream still gets a traceparent: a new span-id, the
// sampled flag clear.
func TestTracingNotSampled(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		desc    string
		sample  float64
		tp      string
		trusted []string
	}{
		{desc: "sample 0%, no parent", sample: 0},
		{desc: "trusted unsampled parent at 100%", sample: 1, tp: "00-" + clientTrace + "-" + clientSpan + "-00", trusted: []string{"127.0.0.0/8"}},
		// A client's sampled flag does not force a span: the ratio decides.
		{desc: "untrusted sampled parent at 0%", sample: 0, tp: "00-" + clientTrace + "-" + clientSpan + "-01"},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			up := backend(t, "a")
			tf, url := tracedFront(t, tt.sample, addr(up), tt.trusted...)
			var fields []string
			if tt.tp != "" {
				fields = []string{"Traceparent", tt.tp}
			}
			got, _, _ := get(t, url, fields...)
			hop, ok := tracing.ParseTraceparent(got)
			if !ok || hop.Sampled() || hex.EncodeToString(hop.SpanID[:]) == clientSpan {
				t.Fatalf("upstream got traceparent %q, want a new unsampled span-id", got)
			}
			if tt.tp != "" && hex.EncodeToString(hop.TraceID[:]) != clientTrace {
				t.Errorf("upstream got trace %x, want the parent's", hop.TraceID)
			}
			if ss := tf.spans(t, 1); len(ss) != 0 {
				t.Errorf("%d spans exported, want none", len(ss))
			}
		})
	}
}

// TestTracingServerError: a 5xx is the span's error; no upstream is no
// server and no try.
func TestTracingServerError(t *testing.T) {
	t.Parallel()
	tf, url := tracedFront(t, 1, "127.0.0.1:1") // nothing listens
	if _, _, status := get(t, url); status != 502 {
		t.Fatalf("status %d, want 502", status)
	}
	ss := tf.spans(t, 1)
	if len(ss) != 1 || ss[0].Status.Code != codes.Error {
		t.Fatalf("spans %+v, want one with status error", ss)
	}
	a := attrs(ss[0])
	if a["http.response.status_code"].AsInt64() != 502 || a["error.type"].AsString() != "502" || a["edgeway.route"].AsString() != "api" {
		t.Errorf("attributes %v", a)
	}
}

// TestTracingNotSampledAllocs holds a request that is not sampled to the
// allocations of one with tracing off: the request ID only.
func TestTracingNotSampledAllocs(t *testing.T) {
	skipUnderRace(t)
	tr, err := tracing.New(tracing.Options{Sample: 0, Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()},
		Routes: []conf.Route{testRoute(t, "r", "PathPrefix(`/`)", "", conf.Middleware{Kind: conf.Respond, Code: 200})}}
	rt := New(Options{Tracer: tr})
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	h := rt.Proxy("web")
	req := &httpmsg.Request{Method: "GET", Target: "/a", Host: "example.com", ProtoMajor: 1, ProtoMinor: 1,
		Header: httpmsg.Header{{Name: "Traceparent", Value: "00-" + clientTrace + "-" + clientSpan + "-00"}}}
	w := &recorder{hdr: make(httpmsg.Header, 0, 4)}
	if n := testing.AllocsPerRun(100, func() { h.ServeProxy(w, req) }); n > 1 {
		t.Errorf("%v allocations per request, want 1 (the request ID)", n)
	}
}

var _ sdktrace.SpanExporter = (*tracetest.InMemoryExporter)(nil)

// TestTracingAnsweredRoute: a request the route answers itself (no
// upstream) gets a span too, with its route and no server or tries; the
// protocol version is the request's (HTTP/3 here, as the h3 front end
// fills it).
func TestTracingAnsweredRoute(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr, err := tracing.New(tracing.Options{Sample: 1, Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()},
		Routes: []conf.Route{testRoute(t, "r", "PathPrefix(`/`)", "", conf.Middleware{Kind: conf.Respond, Code: 204})}}
	rt := New(Options{Tracer: tr})
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	req := &httpmsg.Request{Method: "PURGE", Target: "/a?secret=1", Host: "[2001:db8::1]:8443", ProtoMajor: 3, TLS: true}
	rt.Proxy("web").ServeProxy(&recorder{}, req) // the span ends before ServeProxy returns
	if err := tr.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	ss := exp.GetSpans()
	if len(ss) != 1 {
		t.Fatalf("%d spans", len(ss))
	}
	a := attrs(ss[0])
	want := map[attribute.Key]string{"network.protocol.version": "3", "url.scheme": "https", "url.path": "/a",
		"server.address": "2001:db8::1", "server.port": "8443", "http.request.method": "_OTHER",
		"http.request.method_original": "PURGE", "http.response.status_code": "204", "edgeway.route": "r"}
	for k, v := range want {
		if a[k].Emit() != v {
			t.Errorf("%s = %q, want %q", k, a[k].Emit(), v)
		}
	}
	for _, k := range []attribute.Key{"edgeway.upstream", "edgeway.server", "edgeway.tries"} {
		if _, ok := a[k]; ok {
			t.Errorf("%s set on an answered route: %q", k, a[k].Emit())
		}
	}
	if ss[0].Name != "HTTP" {
		t.Errorf("name %q, want HTTP", ss[0].Name)
	}
}
