package main

import (
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
