package router

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/tracing"
)

// discardWriter is a minimal ResponseWriter so the benchmark measures the
// router and its upstream round trip, not a recorder.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}

func BenchmarkServeHTTP(b *testing.B) {
	for _, bc := range []struct {
		desc   string
		access *slog.Logger
	}{
		{desc: "no access log"},
		{desc: "access log", access: slog.New(slog.NewJSONHandler(io.Discard, nil))},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "hello")
			}))
			defer up.Close()
			rt := New(Options{AccessLog: bc.access})
			defer rt.Close()
			err := rt.Apply(&conf.Config{
				Listeners: []conf.Listener{testListener()},
				Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
				Routes:    []conf.Route{testRoute(b, "api", "Host(`api.example`) && PathPrefix(`/v1`)", "u")},
			})
			if err != nil {
				b.Fatal(err)
			}
			h := rt.Handler("web")
			req := httptest.NewRequest("GET", "http://api.example/v1/users?id=7", nil)
			req.RemoteAddr = "192.0.2.1:41000"
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
		})
	}
}

// discardProxyWriter is a minimal httpmsg.ResponseWriter.
type discardProxyWriter struct{}

func (discardProxyWriter) WriteHead(int, httpmsg.Header, int64) error { return nil }
func (discardProxyWriter) Write(p []byte) (int, error)                { return len(p), nil }
func (discardProxyWriter) Flush() error                               { return nil }
func (discardProxyWriter) WriteTrailer(httpmsg.Header) error          { return nil }
func (discardProxyWriter) Abort()                                     {}
func (discardProxyWriter) SetReadDeadline(time.Time) error            { return nil }
func (discardProxyWriter) Tunnel(up net.Conn, _ []byte) error         { return up.Close() }

// BenchmarkServeProxy is the router's own path, as the HTTP/1 engine calls
// it: edgeway's request type in, no net/http adapter.
func BenchmarkServeProxy(b *testing.B) {
	b.Run("metrics off", func(b *testing.B) { benchServeProxy(b, Options{}) })
	b.Run("metrics on", func(b *testing.B) { benchServeProxy(b, Options{Metrics: NewMetrics()}) })
	// The access log as `log { format text }` writes it, to a discarded
	// output: what formatting a line costs.
	text := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.Run("access log on", func(b *testing.B) { benchServeProxy(b, Options{Metrics: NewMetrics(), AccessLog: text}) })
	b.Run("access log 10%", func(b *testing.B) {
		benchServeProxy(b, Options{Metrics: NewMetrics(), AccessLog: text, AccessLeaveOut: 0.9})
	})
}

// BenchmarkServeProxyTracing is BenchmarkServeProxy with tracing off,
// at 1% and at 100% of new traces sampled (requests without a
// traceparent), the spans exported to a discarding exporter: what a
// span costs edgeway, without the network. With tracing off the client
// sends a traceparent, passed through, so that the upstream (in this
// process, its allocations counted) parses as many fields in each case.
func BenchmarkServeProxyTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		benchServeProxy(b, Options{}, httpmsg.Field{Name: "Traceparent", Value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	})
	for _, bc := range []struct {
		desc   string
		sample float64
	}{{"1%", 0.01}, {"100%", 1}} {
		b.Run(bc.desc, func(b *testing.B) {
			benchServeProxy(b, Options{Tracer: benchTracer(b, bc.sample)})
		})
	}
}

// BenchmarkTracingRespond is the router alone (a route that answers
// itself, no upstream), tracing off, at 1% and at 100%: the cost of the
// decision and of a span, without a round trip around it.
func BenchmarkTracingRespond(b *testing.B) {
	for _, bc := range []struct {
		desc   string
		sample float64
	}{{"off", -1}, {"0%", 0}, {"1%", 0.01}, {"100%", 1}} {
		b.Run(bc.desc, func(b *testing.B) {
			opts := Options{}
			if bc.sample >= 0 {
				opts.Tracer = benchTracer(b, bc.sample)
			}
			rt := New(opts)
			defer rt.Close()
			err := rt.Apply(&conf.Config{Listeners: []conf.Listener{testListener()},
				Routes: []conf.Route{testRoute(b, "r", "PathPrefix(`/`)", "", conf.Middleware{Kind: conf.Respond, Code: 200})}})
			if err != nil {
				b.Fatal(err)
			}
			h := rt.Proxy("web")
			req := &httpmsg.Request{Method: "GET", Target: "/v1/users", Host: "api.example", ProtoMajor: 1, ProtoMinor: 1,
				RemoteAddr: netip.MustParseAddrPort("192.0.2.1:41000"), Header: httpmsg.Header{{Name: "User-Agent", Value: "bench"}}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeProxy(discardProxyWriter{}, req)
			}
		})
	}
}

// benchTracer is a tracer at sample whose spans go to a discarding
// exporter; drops (a full queue) are reported per op.
func benchTracer(b *testing.B, sample float64) *tracing.Tracer {
	tr, err := tracing.New(tracing.Options{Sample: sample, ServiceName: "bench", Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if st := tr.Stats(); st.QueueFull > 0 {
			b.ReportMetric(float64(st.QueueFull)/float64(b.N), "dropped/op")
		}
		tr.Shutdown(context.Background())
	})
	return tr
}

func benchServeProxy(b *testing.B, opts Options, extra ...httpmsg.Field) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}))
	defer up.Close()
	rt := New(opts)
	defer rt.Close()
	err := rt.Apply(&conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(b, "api", "Host(`api.example`) && PathPrefix(`/v1`)", "u")},
	})
	if err != nil {
		b.Fatal(err)
	}
	h := rt.Proxy("web")
	fields := append(httpmsg.Header{{Name: "User-Agent", Value: "bench"}, {Name: "Accept", Value: "*/*"}}, extra...)
	req := httpmsg.Request{Method: "GET", Target: "/v1/users?id=7", Host: "api.example",
		ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: netip.MustParseAddrPort("192.0.2.1:41000")}
	b.ReportAllocs()
	for b.Loop() {
		req.Header = append(req.Header[:0], fields...)
		h.ServeProxy(discardProxyWriter{}, &req)
	}
}

// BenchmarkServeProxyBody is BenchmarkServeProxy for a POST with a body of
// 1 KiB and 256 KiB, buffered (the default) and streamed (`request_buffering
// off`): what reading a body whole before the upstream costs.
func BenchmarkServeProxyBody(b *testing.B) {
	for _, size := range []int{1 << 10, 256 << 10} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB buffered", size>>10)
			if stream {
				name = fmt.Sprintf("%dKiB streamed", size>>10)
			}
			b.Run(name, func(b *testing.B) { benchServeProxyBody(b, size, stream) })
		}
	}
}

func benchServeProxyBody(b *testing.B, size int, stream bool) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "hello")
	}))
	defer up.Close()
	rt := New(Options{})
	defer rt.Close()
	route := testRoute(b, "api", "PathPrefix(`/v1`)", "u")
	route.StreamRequestBody = stream
	err := rt.Apply(&conf.Config{Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})}, Routes: []conf.Route{route}})
	if err != nil {
		b.Fatal(err)
	}
	h := rt.Proxy("web")
	body := bytes.Repeat([]byte("x"), size)
	var br bytes.Reader
	req := httpmsg.Request{Method: "POST", Target: "/v1/upload", Host: "api.example", ProtoMajor: 1, ProtoMinor: 1,
		RemoteAddr: netip.MustParseAddrPort("192.0.2.1:41000"), ContentLength: int64(size)}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		br.Reset(body)
		req.Body, req.Header = &br, append(req.Header[:0], httpmsg.Field{Name: "Content-Type", Value: "application/octet-stream"})
		h.ServeProxy(discardProxyWriter{}, &req)
	}
}
