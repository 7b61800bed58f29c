package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/router"
)

// liveConfig is the configuration the admin API shows: the one live in
// the router, the table compiled from it, and where it came from.
type liveConfig struct {
	cfg        *conf.Config
	snap       *router.Snapshot
	generation int
	loadedAt   time.Time
	files      []admin.File
	hash       string
}

// setLive records cfg, just applied to the router, as the live
// configuration. Only wait's goroutine (and start, before it) calls it.
func (d *daemon) setLive(cfg *conf.Config) {
	d.generation++
	l := &liveConfig{cfg: cfg, snap: d.router.Snapshot(), generation: d.generation, loadedAt: time.Now()}
	for i, f := range cfg.Files {
		l.files = append(l.files, admin.File{Path: f, SHA256: cfg.FileSHA256[i]})
	}
	l.hash = admin.ConfigHash(l.files)
	d.live.Store(l)
	d.metrics.SetConfig(l.hash, l.loadedAt)
}

// startAdmin starts the admin server when the configuration has an admin
// block.
func (d *daemon) startAdmin() error {
	a := d.cfg.Admin
	if a == nil {
		return nil
	}
	if a.CreateToken {
		created, err := admin.CreateTokenFile(a.TokenFile)
		if err != nil {
			return err
		}
		if created {
			d.log.Info("admin token created", "token_file", a.TokenFile)
		}
	}
	if a.StateDir != "" {
		if err := os.MkdirAll(a.StateDir, 0o700); err != nil {
			return fmt.Errorf("admin state_dir: %w", err)
		}
	}
	srv, err := admin.New(admin.Options{
		Listen: a.Listen, TokenFile: a.TokenFile, Log: d.log, Metrics: d.metrics,
		Reloader: d, Routes: d, Explain: d, Config: d,
	})
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	d.registerUpstreamAPI(srv)
	d.registerClusterAPI(srv)
	d.registerCertificateAPI(srv)
	d.registerOverviewAPI(srv)
	d.registerRouteAPI(srv)
	d.metrics.Register(newCertificateCollector(d))
	if err := srv.Start(); err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	d.admin = srv
	d.log.Info("admin API listening", "addr", srv.Addr().String(), "token_file", a.TokenFile)
	return nil
}

// stopAdmin stops the admin server last, so that /readyz answers 503 and
// /metrics is scraped while the listeners drain.
func (d *daemon) stopAdmin() {
	if d.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := d.admin.Shutdown(ctx); err != nil {
		d.log.Warn("admin API shutdown", "err", err)
	}
}

// Routes implements admin.RouteLister: the live routes, highest priority
// first (ties in file order), HTTP before TCP.
func (d *daemon) Routes() []admin.Route {
	l := d.live.Load()
	all := listenerNames(l.cfg)
	out := make([]admin.Route, 0, len(l.cfg.Routes)+len(l.cfg.TCPRoutes))
	for _, r := range l.cfg.Routes {
		mw := make([]string, len(r.Middlewares))
		for i, m := range r.Middlewares {
			mw[i] = string(m.Kind)
		}
		out = append(out, admin.Route{Name: r.Name, Kind: "http", Rule: r.RuleText, Priority: r.Priority,
			Listeners: orAll(r.Listeners, all), Upstream: r.Upstream, Middlewares: mw, Source: r.Pos.String(),
			Split: d.routeSplit(r.Name)})
	}
	for _, r := range l.cfg.TCPRoutes {
		out = append(out, admin.Route{Name: r.Name, Kind: "tcp", Rule: r.RuleText, Priority: r.Priority,
			Listeners: orAll(r.Listeners, all), Upstream: r.Upstream, Middlewares: []string{}, Source: r.Pos.String()})
	}
	slices.SortStableFunc(out, func(a, b admin.Route) int {
		if a.Kind != b.Kind { // "http" < "tcp"
			return strings.Compare(a.Kind, b.Kind)
		}
		return b.Priority - a.Priority
	})
	return out
}

// orAll returns names, or all when a route names no listener.
func orAll(names, all []string) []string {
	if len(names) == 0 {
		return all
	}
	return names
}

// ConfigStatus implements admin.ConfigInfo.
func (d *daemon) ConfigStatus() admin.ConfigStatus {
	l := d.live.Load()
	return admin.ConfigStatus{
		Version: version, Generation: l.generation, Hash: l.hash,
		LoadedAt: l.loadedAt, Files: l.files, LastReload: d.lastReload.Load(),
	}
}

// Explain implements admin.Explainer on the live table, as `edgeway
// explain` answers on a file.
func (d *daemon) Explain(q admin.ExplainQuery) (admin.Explanation, error) {
	l := d.live.Load()
	cfg := l.cfg
	if addrs := d.boundAddrs.Load(); addrs != nil && len(*addrs) == len(cfg.Listeners) {
		// A URL names the port a listener is bound to (":0" picks one).
		bound := *cfg
		bound.Listeners = slices.Clone(cfg.Listeners)
		for i := range bound.Listeners {
			bound.Listeners[i].Addr = (*addrs)[i]
		}
		cfg = &bound
	}
	return explain(cfg, l.snap, q)
}

// Interface guards.
var (
	_ admin.Reloader    = (*daemon)(nil)
	_ admin.RouteLister = (*daemon)(nil)
	_ admin.Explainer   = (*daemon)(nil)
	_ admin.ConfigInfo  = (*daemon)(nil)
)
