package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/atomicfile"
	"github.com/edgeway/edgeway/router"
)

// The route endpoints of the admin API, for traffic splits:
//
//	GET   /api/routes/{name}   one route, with its split
//	PATCH /api/routes/{name}   {"shares": {"POOL": PERCENT, ...}} or {"shares": null}
//
// They follow the upstream overrides (upstreams.go): the shares a PATCH
// sets, and the pools a rollback set to 0, live in the router's split
// state, kept by route name across reloads while the route keeps the
// same pools; with `admin { state_dir }` they are also written to a
// journal there and replayed at start. A reload that removes the route,
// or changes its set of pools, drops them, live and in the journal
// (logged `route override dropped`). With a cluster block the shares go
// to etcd instead and every instance applies them from its watch
// (hook_cluster.go); a rollback stays on the instance that tripped it.

// routeOverridesFile is the split journal's name in the state directory.
const routeOverridesFile = "route-overrides.json"

func (d *daemon) registerRouteAPI(srv *admin.Server) {
	srv.Handle("GET /api/routes/{name}", func(r *http.Request) (any, error) { return d.route(r.PathValue("name")) })
	srv.Handle("PATCH /api/routes/{name}", d.patchRoute)
	d.metrics.Register(&splitCollector{r: d.router})
}

// route returns the live route name as GET /api/routes lists it.
func (d *daemon) route(name string) (admin.Route, error) {
	for _, rt := range d.Routes() {
		if rt.Name == name && rt.Kind == "http" {
			return rt, nil
		}
	}
	return admin.Route{}, admin.Errorf(http.StatusNotFound, "no route %q", name)
}

// routeSplit is the admin view of a route's split; nil when it has none.
func (d *daemon) routeSplit(name string) *admin.RouteSplit {
	s, ok := d.router.Split(name)
	if !ok {
		return nil
	}
	out := &admin.RouteSplit{Override: s.Override, Sticky: s.Sticky, Pools: make([]admin.SplitPool, len(s.Pools))}
	if rb := s.Rollback; rb != nil {
		out.Rollback = &admin.SplitRollback{ErrorRate: rb.ErrorRate * 100, WindowSeconds: rb.Window.Seconds(), MinRequests: rb.MinRequests}
	}
	for i, p := range s.Pools {
		v := admin.SplitPool{Upstream: p.Upstream, ConfiguredShare: percent(p.Configured), Share: percent(p.Share),
			Requests: p.Requests, Rollbacks: p.Rollbacks, WindowRequests: p.WindowRequests, WindowFailures: p.WindowFailures}
		if !p.RolledBack.IsZero() {
			t := p.RolledBack.UTC()
			v.RolledBack = &t
		}
		out.Pools[i] = v
	}
	return out
}

// percent writes basis points as a percentage.
func percent(bp int) float64 { return float64(bp) / 100 }

// patchRoute sets or clears a split route's shares and answers the
// route.
func (d *daemon) patchRoute(r *http.Request) (any, error) {
	name := r.PathValue("name")
	if _, err := d.route(name); err != nil {
		return nil, err
	}
	shares, err := decodeShares(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return nil, &admin.Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	}
	if d.cluster != nil {
		if err := d.router.CheckSplit(name, shares); err != nil {
			return nil, splitError(name, err)
		}
		if err := d.patchClusterRouteShares(r, name, shares); err != nil {
			return nil, err
		}
		return d.route(name)
	}
	if err := d.router.SetSplit(name, shares); err != nil {
		return nil, splitError(name, err)
	}
	if err := d.saveRouteOverrides(); err != nil {
		d.log.Error("saving route overrides", "err", err)
		return nil, admin.Errorf(http.StatusInternalServerError, "shares applied but not saved: %v", err)
	}
	return d.route(name)
}

// splitError is the admin answer to a split SetSplit or CheckSplit
// refused.
func splitError(name string, err error) error {
	switch {
	case errors.Is(err, router.ErrUnknownSplit):
		return admin.Errorf(http.StatusBadRequest, "route %q does not split its traffic (its `to` names one pool)", name)
	case errors.Is(err, router.ErrBadSplit):
		return admin.Errorf(http.StatusBadRequest, "shares: %v", err)
	}
	return err
}

// decodeShares reads {"shares": {"POOL": PERCENT, ...}} (percentages with
// at most two decimals) or {"shares": null} (nil: back to the files'
// shares).
func decodeShares(r io.Reader) (map[string]int, error) {
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&body); err != nil || body == nil {
		return nil, fmt.Errorf(`body: expected a JSON object such as {"shares": {"api-v1": 90, "api-v2": 10}}`)
	}
	for _, k := range slices.Sorted(maps.Keys(body)) {
		if k != "shares" {
			return nil, fmt.Errorf("%s: unknown field (expected shares)", k)
		}
	}
	raw, ok := body["shares"]
	if !ok {
		return nil, fmt.Errorf(`shares: missing (expected {"POOL": PERCENT, ...} or null)`)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	var pct map[string]float64
	if err := json.Unmarshal(raw, &pct); err != nil || pct == nil {
		return nil, fmt.Errorf(`shares: expected {"POOL": PERCENT, ...} or null, got %s`, shortJSON(raw))
	}
	return basisPoints(pct)
}

// basisPoints turns percentages into basis points, refusing more than
// two decimals.
func basisPoints(pct map[string]float64) (map[string]int, error) {
	out := make(map[string]int, len(pct))
	for _, k := range slices.Sorted(maps.Keys(pct)) {
		v := pct[k]
		bp := math.Round(v * 100)
		if math.Abs(bp-v*100) > 1e-6 || v < 0 || v > 100 {
			return nil, fmt.Errorf("shares: %s: expected a percentage 0 to 100 with at most two decimals, got %v", k, v)
		}
		out[k] = int(bp)
	}
	return out, nil
}

// routeOverride is one route's entry in the journal.
type routeOverride struct {
	Shares     map[string]float64   `json:"shares,omitempty"`
	RolledBack map[string]time.Time `json:"rolled_back,omitempty"`
}

// routeJournalMu serialises the journal's writes (a PATCH and the
// rollback hook may race), so that the state read last is written last.
var routeJournalMu sync.Mutex

// saveRouteOverrides writes the split overrides to the journal in the
// state directory; nothing without one.
func (d *daemon) saveRouteOverrides() error {
	dir := d.stateDir()
	if dir == "" {
		return nil
	}
	routeJournalMu.Lock()
	defer routeJournalMu.Unlock()
	j := map[string]routeOverride{}
	for name, o := range d.router.SplitOverrides() {
		e := routeOverride{RolledBack: o.RolledBack}
		if o.Shares != nil {
			e.Shares = map[string]float64{}
			for p, bp := range o.Shares {
				e.Shares[p] = percent(bp)
			}
		}
		j[name] = e
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the route overrides: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, routeOverridesFile), b); err != nil {
		return fmt.Errorf("writing the route overrides journal: %w", err)
	}
	return nil
}

// replayRouteOverrides applies the journal at start, and has the router
// write it after each rollback; an entry that no longer applies is
// dropped (and logged).
func (d *daemon) replayRouteOverrides() {
	d.router.OnSplitRollback(func(string) {
		if err := d.saveRouteOverrides(); err != nil {
			d.log.Error("saving route overrides", "err", err)
		}
	})
	dir := d.stateDir()
	if dir == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, routeOverridesFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	var j map[string]routeOverride
	if err == nil {
		err = json.Unmarshal(bytes.TrimSpace(b), &j)
	}
	if err != nil {
		d.log.Error("starting without the route overrides", "err", fmt.Errorf("reading the route overrides journal: %w", err))
		return
	}
	dropped := false
	for _, name := range slices.Sorted(maps.Keys(j)) {
		e := j[name]
		o := router.SplitOverride{RolledBack: e.RolledBack}
		if e.Shares != nil {
			if o.Shares, err = basisPoints(e.Shares); err != nil {
				d.dropRouteOverride(name, err.Error())
				dropped = true
				continue
			}
		}
		if err := d.router.RestoreSplit(name, o); err != nil {
			d.dropRouteOverride(name, err.Error())
			dropped = true
		}
	}
	if dropped {
		if err := d.saveRouteOverrides(); err != nil {
			d.log.Error("saving route overrides", "err", err)
		}
	}
}

// dropRoutesByReload logs the split overrides in before that the reload
// dropped (their route left the files or changed its pools) and rewrites
// the journal without them.
func (d *daemon) dropRoutesByReload(before map[string]router.SplitOverride) {
	after := d.router.SplitOverrides()
	dropped := false
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if _, ok := after[name]; !ok {
			d.dropRouteOverride(name, "its route left the files or changed its pools")
			dropped = true
		}
	}
	if dropped {
		if err := d.saveRouteOverrides(); err != nil {
			d.log.Error("saving route overrides", "err", err)
		}
	}
}

func (d *daemon) dropRouteOverride(route, reason string) {
	d.log.Warn("route override dropped", "route", route, "reason", reason)
}

// splitCollector reads the splits' and mirrors' counters at scrape
// time.
type splitCollector struct{ r *router.Router }

var (
	splitRequestsDesc = prometheus.NewDesc("edgeway_split_requests_total",
		"Requests a traffic split placed on each of its pools.", []string{"route", "upstream"}, nil)
	splitShareDesc = prometheus.NewDesc("edgeway_split_share_ratio",
		"The share of a split's traffic each pool has now, 0 to 1 (0 after a rollback).", []string{"route", "upstream"}, nil)
	splitRollbacksDesc = prometheus.NewDesc("edgeway_split_rollbacks_total",
		"Times a split's rollback set a pool's share to 0.", []string{"route", "upstream"}, nil)
)

// Describe implements prometheus.Collector.
func (c *splitCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- splitRequestsDesc
	ch <- splitShareDesc
	ch <- splitRollbacksDesc
}

// Collect implements prometheus.Collector.
func (c *splitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.r.Splits() {
		for _, p := range s.Pools {
			ch <- prometheus.MustNewConstMetric(splitRequestsDesc, prometheus.CounterValue, float64(p.Requests), s.Route, p.Upstream)
			ch <- prometheus.MustNewConstMetric(splitShareDesc, prometheus.GaugeValue, float64(p.Share)/conf.ShareScale, s.Route, p.Upstream)
			ch <- prometheus.MustNewConstMetric(splitRollbacksDesc, prometheus.CounterValue, float64(p.Rollbacks), s.Route, p.Upstream)
		}
	}
}
