package main

import (
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/edgeway/edgeway/admin"
)

// GET /api/overview: the listeners and the totals the dashboard's
// overview turns into rates (it divides the difference of two answers by
// their time apart). Every number is read from the metrics registry that
// /metrics serves, so the proxy path does no work for it; the cost is one
// Gather per call, on the admin listener.

// overview is GET /api/overview.
type overview struct {
	Time      time.Time      `json:"time"`
	Listeners []listenerView `json:"listeners"`
	// RequestsTotal counts requests answered (edgeway_requests_total),
	// Responses5xx those answered with a 5xx.
	RequestsTotal     uint64 `json:"requests_total"`
	Responses5xxTotal uint64 `json:"responses_5xx_total"`
	// RefusedTotal counts requests refused before routing
	// (edgeway_requests_refused_total).
	RefusedTotal uint64 `json:"refused_total"`
	// Connections is the open client connections of every listener.
	Connections uint64 `json:"connections"`
	// TunnelsTotal counts tunnels ended (edgeway_tunnels_total).
	TunnelsTotal uint64 `json:"tunnels_total"`
}

// listenerView is one listener as bound.
type listenerView struct {
	Name        string   `json:"name"`
	Addr        string   `json:"addr"`
	Protocols   []string `json:"protocols"`
	Connections uint64   `json:"connections"`
}

func (d *daemon) registerOverviewAPI(srv *admin.Server) {
	srv.Handle("GET /api/overview", func(*http.Request) (any, error) {
		fams, err := d.metrics.Registry().Gather()
		if err != nil {
			return nil, admin.Errorf(http.StatusInternalServerError, "gathering metrics: %w", err)
		}
		return d.overview(fams), nil
	})
	srv.Handle("GET /api/routes/stats", func(r *http.Request) (any, error) {
		names := r.URL.Query()["route"]
		if len(names) > maxStatsRoutes {
			return nil, admin.Errorf(http.StatusBadRequest, "route: at most %d names, got %d", maxStatsRoutes, len(names))
		}
		fams, err := d.metrics.Registry().Gather()
		if err != nil {
			return nil, admin.Errorf(http.StatusInternalServerError, "gathering metrics: %w", err)
		}
		return routeStatsOf(fams, names), nil
	})
}

// maxStatsRoutes bounds the routes one GET /api/routes/stats names: a
// page of the dashboard's table, with room.
const maxStatsRoutes = 500

// routeStatsList is GET /api/routes/stats.
type routeStatsList struct {
	Time time.Time `json:"time"`
	// Routes has an entry for each route named (every route that has
	// answered a request when none is named), traffic or not.
	Routes map[string]*routeStats `json:"routes"`
}

// routeStats is one route's traffic since start, summed over listeners.
type routeStats struct {
	RequestsTotal     uint64 `json:"requests_total"`
	Responses5xxTotal uint64 `json:"responses_5xx_total"`
	// DurationBuckets are edgeway_request_duration_seconds' cumulative
	// counts by upper bound (le, seconds; +Inf left out: it is
	// DurationCount).
	DurationBuckets []durationBucket `json:"duration_buckets"`
	DurationCount   uint64           `json:"duration_count"`
}

type durationBucket struct {
	LE    float64 `json:"le"`
	Count uint64  `json:"count"`
}

// routeStatsOf sums the per-route families for the routes named (all
// when none are).
func routeStatsOf(fams []*dto.MetricFamily, names []string) routeStatsList {
	out := routeStatsList{Time: time.Now().UTC(), Routes: map[string]*routeStats{}}
	for _, n := range names {
		out.Routes[n] = &routeStats{DurationBuckets: []durationBucket{}}
	}
	get := func(m *dto.Metric) *routeStats {
		name := label(m, "route")
		st := out.Routes[name]
		if st == nil && len(names) == 0 && name != "" {
			st = &routeStats{DurationBuckets: []durationBucket{}}
			out.Routes[name] = st
		}
		return st
	}
	for _, f := range fams {
		switch f.GetName() {
		case "edgeway_requests_total":
			for _, m := range f.GetMetric() {
				if st := get(m); st != nil {
					n := uint64(m.GetCounter().GetValue())
					st.RequestsTotal += n
					if label(m, "code") == "5xx" {
						st.Responses5xxTotal += n
					}
				}
			}
		case "edgeway_request_duration_seconds":
			for _, m := range f.GetMetric() {
				if st := get(m); st != nil {
					st.addHistogram(m.GetHistogram())
				}
			}
		}
	}
	return out
}

// addHistogram adds one listener's histogram of the route to st.
func (st *routeStats) addHistogram(h *dto.Histogram) {
	st.DurationCount += h.GetSampleCount()
	for i, b := range h.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		if i < len(st.DurationBuckets) {
			st.DurationBuckets[i].Count += b.GetCumulativeCount()
		} else {
			st.DurationBuckets = append(st.DurationBuckets, durationBucket{LE: b.GetUpperBound(), Count: b.GetCumulativeCount()})
		}
	}
}

// overview sums the families the overview shows.
func (d *daemon) overview(fams []*dto.MetricFamily) overview {
	o := overview{Time: time.Now().UTC(), Listeners: []listenerView{}}
	conns := map[string]uint64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "edgeway_requests_total":
				n := uint64(m.GetCounter().GetValue())
				o.RequestsTotal += n
				if label(m, "code") == "5xx" {
					o.Responses5xxTotal += n
				}
			case "edgeway_requests_refused_total":
				o.RefusedTotal += uint64(m.GetCounter().GetValue())
			case "edgeway_tunnels_total":
				o.TunnelsTotal += uint64(m.GetCounter().GetValue())
			case "edgeway_client_connections":
				n := uint64(m.GetGauge().GetValue())
				conns[label(m, "listener")] += n
				o.Connections += n
			}
		}
	}
	// The live configuration's listeners are the bound ones (a reload
	// that changes them is refused); d.bound is set after the admin
	// server starts, so it is not read here.
	lcs := d.live.Load().cfg.Listeners
	addrs := d.boundAddrs.Load()
	for i, l := range lcs {
		v := listenerView{Name: l.Name, Addr: l.Addr, Protocols: l.Protocols, Connections: conns[l.Name]}
		if addrs != nil && len(*addrs) == len(lcs) {
			v.Addr = (*addrs)[i]
		}
		if v.Protocols == nil {
			v.Protocols = []string{}
		}
		o.Listeners = append(o.Listeners, v)
	}
	return o
}

// label returns the value of m's label name, "" when it has none.
func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
