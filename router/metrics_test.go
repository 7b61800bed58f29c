package router

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/edgeway/edgeway/conf"
)

// gather returns every sample of reg as "name{labels} value" lines.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName() + labelString(m.GetLabel())
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

func labelString(ls []*dto.LabelPair) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.GetName() + "=" + l.GetValue())
	}
	return b.String() + "}"
}

func TestMetricsAfterKnownTraffic(t *testing.T) {
	t.Parallel()
	a := backend(t, "a")
	dead := closedAddr(t)
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(a)}), testUpstream("dead", []string{dead})},
		Routes: []conf.Route{
			testRoute(t, "api", "PathPrefix(`/api`)", "a"),
			testRoute(t, "down", "PathPrefix(`/down`)", "dead"),
		},
	}
	rt, fe := front(t, cfg, Options{Metrics: m})
	for range 2 {
		do(t, nil, newReq(t, "GET", fe.URL+"/api/x"))
	}
	do(t, nil, newReq(t, "POST", fe.URL+"/api/x"))
	do(t, nil, newReq(t, "GET", fe.URL+"/nothing"))
	do(t, nil, newReq(t, "GET", fe.URL+"/down"))
	// A reload keeps the counters of routes that stay.
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	do(t, nil, newReq(t, "GET", fe.URL+"/api/y"))
	got := gather(t, reg)
	want := map[string]float64{
		"edgeway_requests_total{code=2xx,listener=web,method=GET,route=api}":                 3,
		"edgeway_requests_total{code=2xx,listener=web,method=POST,route=api}":                1,
		"edgeway_requests_total{code=4xx,listener=web,method=GET,route=}":                    1,
		"edgeway_requests_total{code=5xx,listener=web,method=GET,route=down}":                1,
		"edgeway_request_duration_seconds{listener=web,route=api}_count":                     4,
		"edgeway_upstream_requests_total{code=2xx,server=" + addr(a) + ",upstream=a}":        4,
		"edgeway_upstream_errors_total{kind=connect,server=" + dead + ",upstream=dead}":      1,
		"edgeway_upstream_request_duration_seconds{server=" + addr(a) + ",upstream=a}_count": 4,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if got["edgeway_sent_bytes_total{listener=web}"] == 0 {
		t.Errorf("sent bytes not counted: %v", got)
	}
	if t.Failed() {
		t.Logf("gathered: %v", got)
	}
}

// TestMetricsDropRemovedSeries: a reload that removes a route and its
// upstream takes their series out of the scrape; those that stay keep
// their counts.
func TestMetricsDropRemovedSeries(t *testing.T) {
	t.Parallel()
	a, b := backend(t, "a"), backend(t, "b")
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(a)}), testUpstream("b", []string{addr(b)})},
		Routes: []conf.Route{
			testRoute(t, "keep", "PathPrefix(`/keep`)", "a"),
			testRoute(t, "gone", "PathPrefix(`/gone`)", "b"),
		},
	}
	rt, fe := front(t, cfg, Options{Metrics: m})
	do(t, nil, newReq(t, "GET", fe.URL+"/keep"))
	do(t, nil, newReq(t, "GET", fe.URL+"/gone"))
	goneRoute := "edgeway_requests_total{code=2xx,listener=web,method=GET,route=gone}"
	goneServer := "edgeway_upstream_requests_total{code=2xx,server=" + addr(b) + ",upstream=b}"
	kept := "edgeway_requests_total{code=2xx,listener=web,method=GET,route=keep}"
	if got := gather(t, reg); got[goneRoute] != 1 || got[goneServer] != 1 || got[kept] != 1 {
		t.Fatalf("before the reload: %v", got)
	}
	next := *cfg
	next.Upstreams, next.Routes = cfg.Upstreams[:1], cfg.Routes[:1]
	if err := rt.Apply(&next); err != nil {
		t.Fatal(err)
	}
	got := gather(t, reg)
	for k := range got {
		if strings.Contains(k, "route=gone") || strings.Contains(k, "upstream=b") {
			t.Errorf("series of a removed route or upstream still scraped: %s", k)
		}
	}
	if got[kept] != 1 {
		t.Errorf("%s = %v after the reload, want 1", kept, got[kept])
	}
}
