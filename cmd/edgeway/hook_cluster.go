package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/cluster"
	"github.com/edgeway/edgeway/conf"
	edgetls "github.com/edgeway/edgeway/tls"
	"github.com/edgeway/edgeway/upstream"
)

// The cluster hook: with a `cluster { ... }` block the upstream overrides
// live in etcd (package cluster) instead of the state_dir journal. A PATCH
// writes to etcd first and answers 503 when it cannot, so that no
// instance applies what the others do not; every instance, the writer
// too, applies the table from its watch, again after each reload.

// clusterState is the daemon's cluster membership; nil without a cluster
// block.
type clusterState struct {
	node      *cluster.Node
	overrides *cluster.Overrides
	mu        sync.Mutex // serialises applying the table (watch and reload)

	routeShares *cluster.RouteShares
	sharesMu    sync.Mutex              // serialises applying route shares
	sharesSeen  cluster.RouteShareTable // the table applied last; guarded by sharesMu
}

// routeSharesCacheFile is the sealed copy of the cluster's route share
// table in the state directory, read at start while etcd is unreachable.
const routeSharesCacheFile = "cluster-route-shares.sealed"

// overridesCacheFile is the sealed copy of the cluster's override table in
// the state directory, read at start while etcd is unreachable.
const overridesCacheFile = "cluster-overrides.sealed"

// ticketKeysCacheFile is the cluster's session ticket key record as etcd
// holds it (sealed), read at start while etcd is unreachable.
const ticketKeysCacheFile = "cluster-ticket-keys.sealed"

// startCluster joins the cluster when the configuration has a cluster
// block, and starts applying the cluster's overrides to the pools.
func (d *daemon) startCluster() error {
	c := d.cfg.Cluster
	if c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := cluster.Start(ctx, *c, d.log)
	if err != nil {
		return fmt.Errorf("%s: cluster: %w", c.Pos, err)
	}
	n.SetMember(version, clusterConfigHash(d.cfg))
	cs := &clusterState{node: n}
	d.cluster = cs
	d.members.Store(n)
	cache, ticketCache, sharesCache := "", "", ""
	if dir := d.stateDir(); dir != "" {
		cache, ticketCache = filepath.Join(dir, overridesCacheFile), filepath.Join(dir, ticketKeysCacheFile)
		sharesCache = filepath.Join(dir, routeSharesCacheFile)
	}
	cs.overrides = n.Overrides(cache, d.applyClusterOverrides)
	cs.routeShares = n.RouteShares(sharesCache, func(t cluster.RouteShareTable) { d.applyClusterRouteShares(t, false) })
	if stores := d.ticketStores(); len(stores) > 0 {
		n.TicketKeys(clusterTicketPeriod(d.cfg), ticketCache, func(keys [][32]byte) {
			for _, s := range stores {
				s.SetTicketKeys(keys)
			}
		})
	}
	d.registerClusterMetrics(n)
	d.log.Info("cluster joined", "name", n.Name(), "etcd", strings.Join(c.Etcd, " "), "connected", n.Connected())
	return nil
}

// ticketStores are the certificate stores whose session ticket keys the
// cluster shares: the tls block's and each listener's own (all made at
// start, so the list does not change).
func (d *daemon) ticketStores() []*edgetls.Store {
	var out []*edgetls.Store
	if d.store != nil {
		out = append(out, d.store)
	}
	for _, name := range slices.Sorted(maps.Keys(d.own)) {
		out = append(out, d.own[name])
	}
	return out
}

// clusterTicketPeriod is the cluster's ticket key rotation period: the tls
// block's ticket_rotation (12h by default). Every instance should set the
// same; each schedules from the record's last rotation with its own.
func clusterTicketPeriod(cfg *conf.Config) time.Duration {
	if cfg.TLS != nil && cfg.TLS.TicketRotation > 0 {
		return cfg.TLS.TicketRotation
	}
	return edgetls.DefaultTicketRotation
}

// liveMembers is the number of live instances that share each rate limit:
// the cluster's live members, or 1 without a cluster block. It is one atomic
// read, called per rate-limited request.
func (d *daemon) liveMembers() int {
	if n := d.members.Load(); n != nil {
		return n.LiveMembers()
	}
	return 1
}

// clusterReloaded re-applies the cluster's overrides to the new pools (a
// server back in the files gets its override back) and publishes the new
// configuration hash.
func (d *daemon) clusterReloaded(cfg *conf.Config) {
	if d.cluster == nil {
		return
	}
	d.applyClusterOverrides(d.cluster.overrides.Table())
	d.applyClusterRouteShares(d.cluster.routeShares.Table(), true)
	d.cluster.node.SetMember(version, clusterConfigHash(cfg))
}

// stopCluster leaves the cluster (revoking this instance's lease).
func (d *daemon) stopCluster() {
	if d.cluster != nil {
		d.cluster.node.Close()
	}
}

// clusterConfigHash identifies the content of the route files the main
// file includes, for drift between members: the main file itself is left
// out, since it holds what differs per instance (name, addresses, paths).
func clusterConfigHash(cfg *conf.Config) string {
	h := sha256.New()
	for i, s := range cfg.FileSHA256 {
		if cfg.Files[i] != cfg.MainFile {
			h.Write([]byte(s))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// applyClusterOverrides makes every live server's override what the table
// says: set where the table has one, cleared where it has none. Only the
// servers whose override changes are touched.
func (d *daemon) applyClusterOverrides(t cluster.OverrideTable) {
	cs := d.cluster
	if cs != nil {
		cs.mu.Lock()
		defer cs.mu.Unlock()
	}
	for name, p := range d.router.Pools() {
		for _, s := range p.Status().Servers {
			want := t[name][s.Addr]
			if o, ok := overrideChange(s.Override, want); ok {
				if err := p.SetOverride(s.Addr, o); err != nil {
					d.log.Warn("cluster override not applied", "upstream", name, "server", s.Addr, "err", err)
				}
			}
		}
	}
}

// overrideChange is the upstream.Override that turns have into want, and
// whether there is any change.
func overrideChange(have upstream.OverrideStatus, want cluster.Override) (upstream.Override, bool) {
	var o upstream.Override
	changed := false
	if !eqPtr(have.Weight, want.Weight) {
		o.Weight, o.ClearWeight, changed = want.Weight, want.Weight == nil, true
	}
	if !eqPtr(have.Drain, want.Drain) {
		o.Drain, o.ClearDrain, changed = want.Drain, want.Drain == nil, true
	}
	if !eqPtr(have.Disabled, want.Disabled) {
		o.Disabled, o.ClearDisabled, changed = want.Disabled, want.Disabled == nil, true
	}
	return o, changed
}

func eqPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// patchCluster writes a PATCH's override to etcd. The pool and server
// are checked here first (404, as without a cluster); when etcd cannot be
// reached the answer is 503 and nothing changed anywhere.
func (d *daemon) patchCluster(r *http.Request, p *upstream.Pool, addr string, o upstream.Override) (any, error) {
	if p.Server(addr) == nil {
		return nil, admin.Errorf(http.StatusNotFound, "upstream %s: server %s: %v", p.Status().Name, addr, upstream.ErrUnknownServer)
	}
	_, err := d.cluster.overrides.Update(r.Context(), p.Status().Name, addr, func(v cluster.Override) (cluster.Override, error) {
		v.Weight = mergeField(v.Weight, o.Weight, o.ClearWeight)
		v.Drain = mergeField(v.Drain, o.Drain, o.ClearDrain)
		v.Disabled = mergeField(v.Disabled, o.Disabled, o.ClearDisabled)
		return v, nil
	})
	if errors.Is(err, cluster.ErrUnavailable) {
		d.log.Error("upstream override refused: cluster store unreachable", "upstream", p.Status().Name, "server", addr, "err", err)
		return nil, &admin.Error{Status: http.StatusServiceUnavailable, Message: "cluster store unreachable; not applied on any instance", Err: err}
	}
	if err != nil {
		return nil, err
	}
	return d.poolView(p), nil
}

// mergeField is a PATCH field on the stored value: set, cleared, or kept.
func mergeField[T any](cur, set *T, clear bool) *T {
	switch {
	case clear:
		return nil
	case set != nil:
		return set
	}
	return cur
}

// poolView is newPoolView with, in a cluster, who set each override and
// when.
func (d *daemon) poolView(p *upstream.Pool) poolView {
	v := newPoolView(p.Status())
	if d.cluster == nil {
		return v
	}
	t := d.cluster.overrides.Table()[v.Name]
	for i := range v.Servers {
		if o, ok := t[v.Servers[i].Address]; ok && v.Servers[i].Override != nil {
			at := o.At
			v.Servers[i].OverrideBy, v.Servers[i].OverrideAt = o.By, &at
		}
	}
	return v
}

// clusterView is GET /api/cluster.
type clusterView struct {
	// Enabled is false without a cluster block (then nothing else is set).
	Enabled bool   `json:"enabled"`
	Name    string `json:"name"`
	// Connected is this instance's own state: a live lease session.
	Connected   bool `json:"connected"`
	LiveMembers int  `json:"live_members"`
	// Drift is true when the members run configurations with different
	// hashes (the same files should be on every instance).
	Drift   bool         `json:"drift"`
	Members []memberView `json:"members"`
}

// memberView is one live member, as its record in etcd says.
type memberView struct {
	Name       string    `json:"name"`
	Version    string    `json:"version"`
	Started    time.Time `json:"started"`
	ConfigHash string    `json:"config_hash"`
	// Connected: the member's record is live in etcd (its lease holds).
	Connected bool `json:"connected"`
	// Self marks this instance.
	Self bool `json:"self"`
}

func (d *daemon) registerClusterAPI(srv *admin.Server) {
	srv.Handle("GET /api/cluster", func(*http.Request) (any, error) { return d.clusterView(), nil })
}

func (d *daemon) clusterView() clusterView {
	v := clusterView{Members: []memberView{}}
	if d.cluster == nil {
		return v
	}
	n := d.cluster.node
	v.Enabled, v.Name, v.Connected, v.LiveMembers = true, n.Name(), n.Connected(), n.LiveMembers()
	hashes := map[string]bool{}
	for _, m := range n.Members() {
		v.Members = append(v.Members, memberView{Name: m.Name, Version: m.Version, Started: m.Started,
			ConfigHash: m.ConfigHash, Connected: true, Self: m.Name == n.Name()})
		hashes[m.ConfigHash] = true
	}
	v.Drift = len(hashes) > 1
	return v
}

// applyClusterRouteShares sets each split's shares to what the cluster's
// table says: a route whose entry changed since the table applied last
// gets it (a removed entry: the files' shares again). After a reload
// (reloaded), a route whose override the router dropped (its pools
// changed, or it came back) gets its entry again; the others keep their
// state, a local rollback included. An entry the route's pools no longer
// take is logged and left.
func (d *daemon) applyClusterRouteShares(t cluster.RouteShareTable, reloaded bool) {
	cs := d.cluster
	cs.sharesMu.Lock()
	defer cs.sharesMu.Unlock()
	set := func(route string, shares map[string]int) {
		if err := d.router.SetSplit(route, shares); err != nil {
			d.log.Warn("cluster route shares not applied", "route", route, "err", err)
		}
	}
	for route, rs := range t {
		old, seen := cs.sharesSeen[route]
		st, ok := d.router.Split(route)
		switch {
		case !ok:
		case !seen || !maps.Equal(old.Shares, rs.Shares):
			set(route, rs.Shares)
		case reloaded && !st.Override:
			set(route, rs.Shares)
		}
	}
	for route := range cs.sharesSeen {
		if _, ok := t[route]; !ok {
			if _, split := d.router.Split(route); split {
				set(route, nil)
			}
		}
	}
	cs.sharesSeen = t
}

// patchClusterRouteShares writes a PATCH's shares to etcd (after the
// router checked them); every instance, this one too, applies them from
// its watch. An unreachable etcd is a 503 and changes nothing.
func (d *daemon) patchClusterRouteShares(r *http.Request, route string, shares map[string]int) error {
	if err := d.cluster.routeShares.Set(r.Context(), route, shares); err != nil {
		d.log.Error("route shares refused: cluster store unreachable", "route", route, "err", err)
		return admin.Errorf(http.StatusServiceUnavailable, "the cluster store is unreachable; nothing changed: %v", err)
	}
	return nil
}
