package router

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// mirrorConfig is a route to pool p, mirrored to pool m when mirror is
// set.
func mirrorConfig(t testing.TB, p, m string, mirror bool) *conf.Config {
	r := testRoute(t, "r", "PathPrefix(`/`)", "p")
	if mirror {
		r.Mirror = &conf.Mirror{Upstream: "m", Share: conf.ShareScale}
	}
	return &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("p", []string{p}), testUpstream("m", []string{m})},
		Routes:    []conf.Route{r},
	}
}

// BenchmarkMirrorHanging: a request's latency through a route without a
// mirror and through one whose mirror never answers (its queue full
// after the first few requests): the p99 reported should be the same.
func BenchmarkMirrorHanging(b *testing.B) {
	primary := backend(b, "p")
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	b.Cleanup(hang.Close)
	b.Cleanup(func() { close(release) })
	for _, bc := range []struct {
		desc   string
		mirror bool
	}{{"no mirror", false}, {"mirror hanging", true}} {
		b.Run(bc.desc, func(b *testing.B) {
			rt, s := front(b, mirrorConfig(b, addr(primary), addr(hang), bc.mirror), Options{})
			c := &http.Client{}
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				resp, err := c.Get(s.URL + "/")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ds = append(ds, time.Since(start))
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
			if bc.mirror {
				if ms := rt.Mirrors(); len(ms) != 1 || (b.N > 100 && ms[0].Dropped == 0) {
					b.Errorf("mirror counts %+v, want copies dropped", ms)
				}
			}
		})
	}
}
