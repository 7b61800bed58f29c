package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/edgeway/edgeway/internal/testutil"
)

// otlpReceiver is a real OTLP/HTTP trace receiver: it decodes each POST
// /v1/traces body as the collector's ExportTraceServiceRequest and keeps
// the spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []receivedSpan
	bad   []string // requests it refused, and why
}

// receivedSpan is a span and the service.name of its resource.
type receivedSpan struct {
	*tracepb.Span
	service string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.refuse(w, "gzip: "+err.Error())
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var m coltracepb.ExportTraceServiceRequest
	switch {
	case req.Method != http.MethodPost || req.URL.Path != "/v1/traces":
		r.refuse(w, req.Method+" "+req.URL.Path)
		return
	case req.Header.Get("Content-Type") != "application/x-protobuf":
		r.refuse(w, "content type "+req.Header.Get("Content-Type"))
		return
	case err != nil:
		r.refuse(w, err.Error())
		return
	}
	if err := proto.Unmarshal(b, &m); err != nil {
		r.refuse(w, "decoding: "+err.Error())
		return
	}
	r.mu.Lock()
	for _, rs := range m.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, receivedSpan{Span: s, service: service})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *otlpReceiver) refuse(w http.ResponseWriter, why string) {
	r.mu.Lock()
	r.bad = append(r.bad, why)
	r.mu.Unlock()
	http.Error(w, why, http.StatusBadRequest)
}

func (r *otlpReceiver) received() ([]receivedSpan, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedSpan(nil), r.spans...), append([]string(nil), r.bad...)
}

// traceBackend answers with the traceparent and tracestate it got, as
// "traceparent|tracestate".
func traceBackend(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s|%s", r.Header.Get("Traceparent"), strings.Join(r.Header.Values("Tracestate"), ","))
	}))
	t.Cleanup(s.Close)
	return s
}

// startTraced starts edgeway with a tracing block (otlp URL, sample)
// routing everything to up.
func startTraced(t *testing.T, otlp, sample string, up *httptest.Server) *adminEdgeway {
	t.Helper()
	main := fmt.Sprintf("log { access on; format text; output stderr; level debug }\ntracing { otlp %s; sample %s; service_name edge-test }\n", otlp, sample)
	return startAdmin(t, main, map[string]string{"r.routes": "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  to u\n}\n"})
}

// upstreamSaw sends one request through edgeway with curl (args, then
// the URL) and splits what the upstream saw.
func upstreamSaw(t *testing.T, url string, args ...string) (traceparent, tracestate string) {
	t.Helper()
	out, code := testutil.Curl(t, append(args, url)...)
	tp, ts, ok := strings.Cut(out, "|")
	if code != 0 || !ok {
		t.Fatalf("curl %v: exit %d: %q", args, code, out)
	}
	return tp, ts
}

// traceFields splits a version 00 traceparent into trace-id, parent-id
// and flags.
func traceFields(t *testing.T, tp string) (traceID, parentID, flags string) {
	t.Helper()
	f := strings.Split(tp, "-")
	if len(f) != 4 || f[0] != "00" || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 {
		t.Fatalf("upstream got traceparent %q, want a version 00 one", tp)
	}
	return f[1], f[2], f[3]
}

// stopAndWait sends SIGTERM (the tracer flushes its queue on the way out)
// and waits for the exit.
func stopAndWait(t *testing.T, e *adminEdgeway) {
	t.Helper()
	e.p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := e.p.Wait(t, 20*time.Second); code != 0 {
		t.Fatalf("edgeway exited %d", code)
	}
}

// spanAttrs are a span's string and integer attributes, as text.
func spanAttrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.GetValue().Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		}
	}
	return m
}

// TestTracingOverTheWire: a client's traceparent reaches the upstream
// with the same trace-id and edgeway's span as the parent; the span a
// real OTLP receiver gets has the client's span as its parent, the id the
// upstream saw and the route, upstream, server and status; a request
// without a traceparent starts a new trace. HTTP/1.1 and h2c.
func TestTracingOverTheWire(t *testing.T) {
	recv, up := newOTLPReceiver(t), traceBackend(t)
	e := startTraced(t, recv.srv.URL+"/v1/traces", "100%", up)
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	sent := "00-" + clientTrace + "-" + clientSpan + "-01"

	tp, ts := upstreamSaw(t, e.base+"/v1/users?id=7", "-H", "traceparent: "+sent, "-H", "tracestate: vendor=abc", "-A", "trace-test/1")
	trace1, parent1, flags1 := traceFields(t, tp)
	if trace1 != clientTrace || parent1 == clientSpan || flags1 != "01" || ts != "vendor=abc" {
		t.Errorf("upstream got %q %q; want trace %s, a parent-id other than %s, sampled, tracestate vendor=abc", tp, ts, clientTrace, clientSpan)
	}
	// The access-log line names the trace, so a line leads to its trace.
	e.p.WaitLog(t, `msg=request log=access .* path=/v1/users .* trace_id=`+clientTrace+`\n`)
	tp, ts = upstreamSaw(t, e.base+"/new", "--http2-prior-knowledge", "-H", "tracestate: dropped=1")
	trace2, parent2, flags2 := traceFields(t, tp)
	if trace2 == clientTrace || flags2 != "01" || ts != "" {
		t.Errorf("no traceparent: upstream got %q %q; want a new sampled trace, no tracestate", tp, ts)
	}
	stopAndWait(t, e)

	spans, bad := recv.received()
	if len(bad) > 0 || len(spans) != 2 {
		t.Fatalf("receiver got %d spans, refused %v; want 2", len(spans), bad)
	}
	byTrace := map[string]receivedSpan{}
	for _, s := range spans {
		byTrace[hex.EncodeToString(s.TraceId)] = s
	}
	s1, ok := byTrace[clientTrace]
	if !ok {
		t.Fatalf("no span in trace %s: %v", clientTrace, spans)
	}
	if got := hex.EncodeToString(s1.ParentSpanId); got != clientSpan {
		t.Errorf("span parent %s, want the client's span %s", got, clientSpan)
	}
	if got := hex.EncodeToString(s1.SpanId); got != parent1 {
		t.Errorf("span id %s, want the parent-id the upstream saw, %s", got, parent1)
	}
	if s1.Kind != tracepb.Span_SPAN_KIND_SERVER || s1.Name != "GET" || s1.service != "edge-test" || s1.TraceState != "vendor=abc" {
		t.Errorf("span kind %v name %q service %q tracestate %q", s1.Kind, s1.Name, s1.service, s1.TraceState)
	}
	if s1.EndTimeUnixNano <= s1.StartTimeUnixNano || s1.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("span times %d..%d status %v", s1.StartTimeUnixNano, s1.EndTimeUnixNano, s1.Status)
	}
	want := map[string]string{"http.request.method": "GET", "url.path": "/v1/users", "url.scheme": "http",
		"server.address": "127.0.0.1", "network.protocol.version": "1.1", "client.address": "127.0.0.1",
		"user_agent.original": "trace-test/1", "http.response.status_code": "200", "edgeway.route": "r",
		"edgeway.upstream": "u", "edgeway.server": hostPort(up), "edgeway.tries": "1", "edgeway.listener": "web"}
	a := spanAttrs(s1.Span)
	for k, v := range want {
		if a[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, a[k], v)
		}
	}
	s2, ok := byTrace[trace2]
	if !ok {
		t.Fatalf("no span in the new trace %s", trace2)
	}
	if len(s2.ParentSpanId) != 0 || hex.EncodeToString(s2.SpanId) != parent2 || spanAttrs(s2.Span)["network.protocol.version"] != "2" {
		t.Errorf("new trace: parent %x span %x (upstream saw %s) attributes %v", s2.ParentSpanId, s2.SpanId, parent2, spanAttrs(s2.Span))
	}
}

// TestTracingSampleZero: at 0% no span is exported, yet the upstream
// still gets a traceparent (a new parent-id, the sampled flag clear) in
// the client's trace or a new one.
func TestTracingSampleZero(t *testing.T) {
	recv, up := newOTLPReceiver(t), traceBackend(t)
	e := startTraced(t, recv.srv.URL, "0%", up) // no path: /v1/traces
	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	tp, _ := upstreamSaw(t, e.base+"/", "-H", "traceparent: 00-"+clientTrace+"-"+clientSpan+"-00")
	if tr, parent, flags := traceFields(t, tp); tr != clientTrace || parent == clientSpan || flags != "00" {
		t.Errorf("unsampled parent: upstream got %q", tp)
	}
	tp, _ = upstreamSaw(t, e.base+"/")
	if tr, _, flags := traceFields(t, tp); tr == clientTrace || flags != "00" {
		t.Errorf("no parent: upstream got %q, want a new unsampled trace", tp)
	}
	stopAndWait(t, e)
	if spans, bad := recv.received(); len(spans) != 0 || len(bad) != 0 {
		t.Errorf("receiver got %d spans (refused %v), want none", len(spans), bad)
	}
}

// TestTracingCollectorDown: with nothing listening at the OTLP URL,
// requests are answered as promptly as ever while exports fail; the
// failures are counted, and the shutdown flush gives up in time.
func TestTracingCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20") // export every 20 ms, so exports fail while requests run
	up := traceBackend(t)
	e := startTraced(t, "http://"+closed+"/v1/traces", "100%", up)
	for i := range 20 {
		start := time.Now()
		if tp, _ := upstreamSaw(t, e.base+"/"); !strings.HasSuffix(tp, "-01") {
			t.Fatalf("request %d: upstream got traceparent %q", i, tp)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("request %d took %v with the collector down", i, d)
		}
	}
	testutil.WaitFor(t, "export failures counted", func() bool {
		return e.metricSum(t, "edgeway_trace_spans_dropped_total", `reason="export_failed"`) >= 1
	})
	e.p.WaitLog(t, `msg="trace export failed; spans dropped"`)
	stopAndWait(t, e)
}
