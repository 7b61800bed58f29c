package router

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// BenchmarkServeProxyMirror is BenchmarkServeProxy with the route's
// requests mirrored: none, 10% to a healthy pool, and 100% to a pool
// that never answers (every copy past the 64 in flight dropped). It
// reports the primary's p99 (p99-ns) beside ns/op: what a mirror costs
// the request it copies, whatever the mirror does.
func BenchmarkServeProxyMirror(b *testing.B) {
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "copy") }))
	defer healthy.Close()
	hold := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(hold)
	for _, bc := range []struct {
		desc    string
		mirror  string
		percent int
	}{{"none", "", 0}, {"10% healthy", addr(healthy), 10}, {"100% hanging", addr(hanging), 100}} {
		b.Run(bc.desc, func(b *testing.B) { benchServeProxyMirror(b, bc.mirror, bc.percent) })
	}
}

func benchServeProxyMirror(b *testing.B, mirrorAddr string, percent int) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
	defer up.Close()
	rt := New(Options{Metrics: NewMetrics()})
	defer rt.Close()
	route := testRoute(b, "api", "PathPrefix(`/v1`)", "u")
	ups := []conf.Upstream{testUpstream("u", []string{addr(up)})}
	if mirrorAddr != "" {
		route.Mirrors = []conf.Mirror{{Upstream: "shadow", Percent: percent}}
		ups = append(ups, testUpstream("shadow", []string{mirrorAddr}))
	}
	if err := rt.Apply(&conf.Config{Listeners: []conf.Listener{testListener()}, Upstreams: ups, Routes: []conf.Route{route}}); err != nil {
		b.Fatal(err)
	}
	h := rt.Proxy("web")
	req := httpmsg.Request{Method: "GET", Target: "/v1/users?id=7", Host: "api.example",
		ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: netip.MustParseAddrPort("192.0.2.1:41000")}
	var lat [1 << 14]time.Duration // the last 16,384 requests
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		req.Header = append(req.Header[:0], httpmsg.Field{Name: "User-Agent", Value: "bench"})
		start := time.Now()
		h.ServeProxy(discardProxyWriter{}, &req)
		lat[n%len(lat)] = time.Since(start)
		n++
	}
	s := slices.Clone(lat[:min(n, len(lat))])
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)*99/100]), "p99-ns")
}
