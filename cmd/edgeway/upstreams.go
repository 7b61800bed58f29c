package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
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
		out := upstreamList{Upstreams: make([]poolView, 0, len(pools)), Dropped: []droppedOverride{}}
		for _, n := range slices.Sorted(maps.Keys(pools)) {
			out.Upstreams = append(out.Upstreams, d.poolView(pools[n]))
		}
		if p := d.dropped.Load(); p != nil {
			out.Dropped = *p
		}
		return out, nil
	})
	srv.Handle("GET /api/upstreams/{pool}", func(r *http.Request) (any, error) {
		p, err := d.pool(r.PathValue("pool"))
		if err != nil {
			return nil, err
		}
		return d.poolView(p), nil
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
		return nil, &admin.Error{Status: http.StatusBadRequest, Message: err.Error(), Err: err}
	}
	if d.cluster != nil {
		return d.patchCluster(r, p, r.PathValue("address"), o)
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
	return newPoolView(p.Status()), nil
}

// decodeOverride reads {"weight": N|null, "drain": B|null, "disabled":
// B|null}: a value sets an override, null clears it, an absent field
// leaves it. Its errors name the field, what it takes and what came.
func decodeOverride(r io.Reader) (upstream.Override, error) {
	var o upstream.Override
	var body json.RawMessage
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		got := "invalid JSON (" + err.Error() + ")"
		if errors.Is(err, io.EOF) {
			got = "an empty body"
		}
		return o, fmt.Errorf(`body: expected a JSON object such as {"drain": true}, got %s`, got)
	}
	var fields map[string]json.RawMessage
	if body[0] != '{' || json.Unmarshal(body, &fields) != nil {
		return o, fmt.Errorf(`body: expected a JSON object such as {"drain": true}, got %s`, shortJSON(body))
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) { // the same error for the same body
		if err := setOverrideField(&o, k, fields[k]); err != nil {
			return o, err
		}
	}
	return o, nil
}

// setOverrideField reads one field of a PATCH body into o.
func setOverrideField(o *upstream.Override, k string, v json.RawMessage) error {
	null := string(v) == "null"
	switch k {
	case "weight":
		n, err := strconv.Atoi(string(v))
		if !null && (err != nil || n < 0 || n > upstream.MaxOverrideWeight) {
			return fmt.Errorf("weight: expected an integer 0 to %d or null, got %s", upstream.MaxOverrideWeight, shortJSON(v))
		}
		o.ClearWeight = null
		if !null {
			o.Weight = &n
		}
	case "drain", "disabled":
		if !null && string(v) != "true" && string(v) != "false" {
			return fmt.Errorf("%s: expected true, false or null, got %s", k, shortJSON(v))
		}
		b := string(v) == "true"
		if k == "drain" {
			o.ClearDrain = null
			o.Drain = boolPtr(b, null)
		} else {
			o.ClearDisabled = null
			o.Disabled = boolPtr(b, null)
		}
	default:
		return fmt.Errorf("%s: unknown field (expected weight, drain or disabled)", k)
	}
	return nil
}

// boolPtr returns &b, or nil when the field was null.
func boolPtr(b, null bool) *bool {
	if null {
		return nil
	}
	return &b
}

// shortJSON writes a JSON value as it came, on one line and cut short,
// for an error message.
func shortJSON(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		b.Reset()
		b.Write(v)
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// saveOverrides writes every pool's overrides to the journal in the
// state directory; nothing without one.
func (d *daemon) saveOverrides() error {
	dir := d.stateDir()
	if dir == "" || d.cluster != nil { // the cluster keeps them (hook_cluster.go)
		return nil
	}
	return upstream.SaveOverrides(filepath.Join(dir, overridesFile), d.router.Pools())
}

// replayOverrides applies the journal at start; overrides of pools or
// servers no longer in the files are dropped (and logged).
func (d *daemon) replayOverrides() {
	dir := d.stateDir()
	if dir == "" || d.cluster != nil {
		return
	}
	dropped, err := upstream.ReplayOverrides(filepath.Join(dir, overridesFile), d.router.Pools())
	if err != nil {
		d.log.Error("starting without the upstream overrides", "err", err)
		return
	}
	d.dropOverrides(dropped, "")
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
		kept = append(kept, droppedOverride{Upstream: o.Upstream, Server: o.Server, Override: newOverrideView(o.Override), Reason: why, Time: now})
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
	for _, pool := range slices.Sorted(maps.Keys(before)) {
		for _, addr := range slices.Sorted(maps.Keys(before[pool])) {
			if p := pools[pool]; p == nil || p.Server(addr) == nil {
				out = append(out, upstream.DroppedOverride{Upstream: pool, Server: addr, Override: before[pool][addr]})
			}
		}
	}
	return out
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
