package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/upstream"
)

// The upstream endpoints of the admin API:
//
//	GET   /api/upstreams                            every pool and server
//	GET   /api/upstreams/{pool}                     one pool
//	PATCH /api/upstreams/{pool}/servers/{address}   {"weight": N|null, "drain": B|null, "disabled": B|null}
//
// A PATCH sets (a value) or clears (null) an override; absent fields stay
// as they are. Overrides live in the pools' server state, so they survive
// reloads while the server stays in the files; with `admin { state_dir }`
// they are also written to a journal there and replayed at start. One
// rule, live and in the journal: an override goes with its server. A
// reload that removes the server drops it (a server added back starts
// without), the journal is rewritten, and GET /api/upstreams lists the
// dropped ones under dropped_overrides until restart.

// overridesFile is the journal's name in the state directory
// (upstream.SaveOverrides, upstream.ReplayOverrides).
const overridesFile = "upstream-overrides.json"

func (d *daemon) registerUpstreamAPI(srv *admin.Server) {
	srv.Handle("GET /api/upstreams", func(*http.Request) (any, error) {
		pools := d.router.Pools()
		names := make([]string, 0, len(pools))
		for n := range pools {
			names = append(names, n)
		}
		sort.Strings(names)
		out := make([]upstream.PoolStatus, 0, len(names))
		for _, n := range names {
			out = append(out, pools[n].Status())
		}
		dropped := []droppedOverride{}
		if p := d.dropped.Load(); p != nil {
			dropped = *p
		}
		return map[string]any{"upstreams": out, "dropped_overrides": dropped}, nil
	})
	srv.Handle("GET /api/upstreams/{pool}", func(r *http.Request) (any, error) {
		p, err := d.pool(r.PathValue("pool"))
		if err != nil {
			return nil, err
		}
		return p.Status(), nil
	})
	srv.Handle("PATCH /api/upstreams/{pool}/servers/{address}", d.patchServer)
}

func (d *daemon) pool(name string) (*upstream.Pool, error) {
	p := d.router.Pools()[name]
	if p == nil {
		return nil, admin.Errorf(http.StatusNotFound, "no upstream %q", name)
	}
	return p, nil
}

// patchServer applies a PATCH and answers the pool's new status.
func (d *daemon) patchServer(r *http.Request) (any, error) {
	p, err := d.pool(r.PathValue("pool"))
	if err != nil {
		return nil, err
	}
	o, err := decodeOverride(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return nil, admin.Errorf(http.StatusBadRequest, "%v", err)
	}
	if err := p.SetOverride(r.PathValue("address"), o); err != nil {
		switch {
		case errors.Is(err, upstream.ErrUnknownServer):
			return nil, admin.Errorf(http.StatusNotFound, "%v", err)
		case errors.Is(err, upstream.ErrBadOverride):
			return nil, admin.Errorf(http.StatusBadRequest, "%v", err)
		}
		return nil, err
	}
	if err := d.saveOverrides(); err != nil {
		d.log.Error("saving upstream overrides", "err", err)
		return nil, admin.Errorf(http.StatusInternalServerError, "override applied but not saved: %v", err)
	}
	return p.Status(), nil
}

// decodeOverride reads {"weight": N|null, "drain": B|null, "disabled":
// B|null}: a value sets an override, null clears it, an absent field
// leaves it.
func decodeOverride(r io.Reader) (upstream.Override, error) {
	var raw map[string]json.RawMessage
	var o upstream.Override
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return o, fmt.Errorf("body: %w", err)
	}
	for k, v := range raw {
		null := string(v) == "null"
		var err error
		switch k {
		case "weight":
			o.ClearWeight = null
			if !null {
				o.Weight = new(int)
				err = json.Unmarshal(v, o.Weight)
			}
		case "drain":
			o.ClearDrain = null
			if !null {
				o.Drain = new(bool)
				err = json.Unmarshal(v, o.Drain)
			}
		case "disabled":
			o.ClearDisabled = null
			if !null {
				o.Disabled = new(bool)
				err = json.Unmarshal(v, o.Disabled)
			}
		default:
			return o, fmt.Errorf("unknown field %q (expected weight, drain or disabled)", k)
		}
		if err != nil {
			return o, fmt.Errorf("%s: %w", k, err)
		}
	}
	return o, nil
}

// saveOverrides writes every pool's overrides to the journal in the
// state directory; nothing without one.
func (d *daemon) saveOverrides() error {
	dir := d.stateDir()
	if dir == "" {
		return nil
	}
	return upstream.SaveOverrides(filepath.Join(dir, overridesFile), d.router.Pools())
}

// replayOverrides applies the journal at start; overrides of pools or
// servers no longer in the files are dropped (and logged).
func (d *daemon) replayOverrides() {
	dir := d.stateDir()
	if dir == "" {
		return
	}
	dropped, err := upstream.ReplayOverrides(filepath.Join(dir, overridesFile), d.router.Pools())
	if err != nil {
		d.log.Error("starting without the upstream overrides", "err", err)
		return
	}
	d.dropOverrides(dropped, "")
}

// droppedOverride is an override that no longer applies, as
// GET /api/upstreams lists it.
type droppedOverride struct {
	Upstream string                  `json:"upstream"`
	Server   string                  `json:"server"`
	Override upstream.OverrideStatus `json:"override"`
	Reason   string                  `json:"reason"`
	Time     time.Time               `json:"time"`
}

// maxDropped bounds the dropped overrides kept for the API.
const maxDropped = 100

// dropOverrides logs and keeps the overrides that stopped applying
// (reason, or each one's error) and rewrites the journal without them.
func (d *daemon) dropOverrides(list []upstream.DroppedOverride, reason string) {
	if len(list) == 0 {
		return
	}
	var kept []droppedOverride
	if p := d.dropped.Load(); p != nil {
		kept = slices.Clone(*p)
	}
	now := time.Now()
	for _, o := range list {
		why := reason
		if o.Err != nil {
			why = o.Err.Error()
		}
		d.log.Warn("upstream override dropped", "upstream", o.Upstream, "server", o.Server,
			"override", overrideText(o.Override), "reason", why)
		kept = append(kept, droppedOverride{Upstream: o.Upstream, Server: o.Server, Override: o.Override, Reason: why, Time: now})
	}
	kept = kept[max(0, len(kept)-maxDropped):]
	d.dropped.Store(&kept)
	if err := d.saveOverrides(); err != nil {
		d.log.Error("saving upstream overrides", "err", err)
	}
}

// droppedByReload lists the overrides in before whose server the live
// pools no longer have.
func (d *daemon) droppedByReload(before upstream.Overrides) []upstream.DroppedOverride {
	pools := d.router.Pools()
	var out []upstream.DroppedOverride
	for _, o := range before.Missing(upstream.OverridesOf(pools)) {
		if p := pools[o.Upstream]; p == nil || p.Server(o.Server) == nil {
			out = append(out, o)
		}
	}
	return out
}

// overrideText writes an override as the PATCH body that sets it.
func overrideText(o upstream.OverrideStatus) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// stateDir is the admin block's state_dir of the live configuration
// (admin settings change only with a restart).
func (d *daemon) stateDir() string {
	l := d.live.Load()
	if l == nil || l.cfg.Admin == nil {
		return ""
	}
	return l.cfg.Admin.StateDir
}

// connectionsGauge reports a listener's open client connections.
func connectionsGauge(name string, s *listeners.Server) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "edgeway_client_connections",
		Help:        "Open client connections, by listener.",
		ConstLabels: prometheus.Labels{"listener": name},
	}, func() float64 { return float64(s.Stats().Open) })
}
