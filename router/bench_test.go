package router

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/edgeway/edgeway/conf"
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
