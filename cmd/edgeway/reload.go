package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/upstream"
)

// errStopping refuses an API reload once shutdown has begun.
var errStopping = errors.New("edgeway is shutting down")

// reloadRequest is a POST /api/reload waiting for wait's goroutine to run
// it; done has room for the result.
type reloadRequest struct {
	opts admin.ReloadOptions
	done chan admin.ReloadResult
}

// Reload implements admin.Reloader: the reload runs on wait's goroutine,
// as SIGHUP's and the file watcher's do, so reloads never overlap.
func (d *daemon) Reload(ctx context.Context, opts admin.ReloadOptions) (admin.ReloadResult, error) {
	req := reloadRequest{opts: opts, done: make(chan admin.ReloadResult, 1)}
	select {
	case d.reloads <- req:
	case <-d.stopping:
		return admin.ReloadResult{}, errStopping
	case <-ctx.Done():
		return admin.ReloadResult{}, fmt.Errorf("waiting to reload: %w", ctx.Err())
	}
	select {
	case res := <-req.done:
		return res, nil
	case <-ctx.Done(): // the reload goes on; its result is logged
		return admin.ReloadResult{}, fmt.Errorf("waiting for the reload: %w", ctx.Err())
	}
}

// reloadChanged reloads for SIGHUP and the file watcher: once per change.
// The signal and the watcher both see one edit, and a file the watcher
// already reloaded (or refused) is not read again for the signal that
// follows it; POST /api/reload always reloads.
func (d *daemon) reloadChanged(trigger string) {
	fp := conf.Fingerprint(d.file)
	if fp == d.attempted {
		d.log.Info("configuration files unchanged since the last reload; nothing to do", "trigger", trigger)
		return
	}
	if trigger == "watch" {
		d.log.Info("configuration files changed; reloading")
	}
	d.reloadFiles(trigger, fp, admin.ReloadOptions{})
}

// reload re-reads the configuration files; only a configuration that loads
// and validates whole replaces the live routes. Listener settings of the
// Live class are applied; the others need a restart and are named, not
// applied. The result is logged, counted
// and kept for GET /api/config.
func (d *daemon) reload(trigger string, opts admin.ReloadOptions) admin.ReloadResult {
	return d.reloadFiles(trigger, conf.Fingerprint(d.file), opts)
}

// reloadFiles is reload of the files whose conf.Fingerprint is fp, read
// once by the caller.
func (d *daemon) reloadFiles(trigger, fp string, opts admin.ReloadOptions) admin.ReloadResult {
	start := time.Now()
	d.attempted = fp
	res := admin.ReloadResult{Trigger: trigger, Time: start}
	overrides := upstream.OverridesOf(d.router.Pools())
	routeOverrides := d.router.SplitOverrides()
	if cfg, errs := d.loadNext(opts); len(errs) > 0 {
		res.Error = "reload refused; old configuration stays live"
		res.Errors = errs
		for _, e := range errs {
			if e.At == "" {
				d.log.Error("reload refused; old routes stay live", "trigger", trigger, "err", e.Message)
			} else {
				d.log.Error("reload refused; old routes stay live", "trigger", trigger, "at", e.At, "err", e.Message)
			}
		}
	} else {
		res.OK = true
		d.cfg = cfg
		d.setLive(cfg)
		d.reloadACME(cfg)
		d.dropOverrides(d.droppedByReload(overrides), "its server left the files")
		d.dropRoutesByReload(routeOverrides)
		d.clusterReloaded(cfg)
		d.log.Info("reloaded", "routes", len(cfg.Routes), "upstreams", len(cfg.Upstreams), "trigger", trigger)
	}
	res.Duration = time.Since(start).Seconds()
	res.Generation = d.generation
	d.metrics.ObserveReload(res)
	d.lastReload.Store(&res)
	return res
}

// loadNext loads the files and applies them to the router; it returns
// every reason it refused them.
func (d *daemon) loadNext(opts admin.ReloadOptions) (*conf.Config, []admin.ReloadError) {
	cfg, err := conf.Load(d.file)
	if err != nil {
		return nil, reloadErrors(err)
	}
	if err := listenersChanged(d.bound, cfg.Listeners); err != nil {
		return nil, reloadErrors(err)
	}
	if !opts.AllowEmpty {
		if errs := emptiedListeners(d.cfg, cfg); len(errs) > 0 {
			return nil, errs
		}
	}
	for i, b := range d.bound {
		// Live settings apply below (updateListeners); the others are
		// fixed while the listener stays bound.
		if changed := conf.ChangedSettings(b, cfg.Listeners[i], conf.Restart); len(changed) > 0 {
			d.log.Warn("listener settings changed; they take effect on restart, routes and certificates are reloaded now",
				"listener", b.Name, "settings", strings.Join(changed, " "))
		}
	}
	if !reflect.DeepEqual(adminSettings(d.cfg.Admin), adminSettings(cfg.Admin)) || d.cfg.Log != cfg.Log {
		d.log.Warn("admin or log settings changed; they take effect on restart, routes are reloaded now")
	}
	if !reflect.DeepEqual(d.cfg.Tracing, cfg.Tracing) {
		d.log.Warn("tracing settings changed; they take effect on restart, routes are reloaded now")
	}
	if !sameACMESettings(d.cfg, cfg) {
		d.log.Warn("acme block settings changed (directory, account, storage, challenges, keys); they take effect on restart, the names to order are reloaded now")
	}
	for _, w := range cfg.Warnings {
		d.log.Warn("configuration warning", "at", w.String())
	}
	if err := d.loadCertificates(cfg); err != nil {
		return nil, reloadErrors(err)
	}
	if err := makeBufferDir(cfg); err != nil {
		return nil, reloadErrors(err)
	}
	if err := d.router.Apply(cfg); err != nil {
		return nil, reloadErrors(err)
	}
	d.updateListeners(cfg)
	return cfg, nil
}

// updateListeners applies the live listener settings of cfg, just
// applied to the router, to the bound listeners, and names those that
// changed.
func (d *daemon) updateListeners(cfg *conf.Config) {
	for i, s := range d.servers {
		next := cfg.Listeners[i]
		if err := s.Update(next); err != nil {
			d.log.Error("listener settings not applied; the old ones stay", "listener", next.Name, "err", err)
			continue
		}
		if changed := conf.ChangedSettings(d.cfg.Listeners[i], next, conf.Live); len(changed) > 0 {
			d.log.Info("listener settings applied", "listener", next.Name, "settings", strings.Join(changed, " "))
		}
	}
}

// emptiedListeners refuses a configuration that leaves a listener that
// serves routes now with none: what a truncated or half-written route
// file looks like. An operator who means it reloads with
// POST /api/reload?allow_empty=1.
func emptiedListeners(live, next *conf.Config) []admin.ReloadError {
	var errs []admin.ReloadError
	for i, l := range next.Listeners {
		now := live.RouteCount(live.Listeners[i])
		if now == 0 || next.RouteCount(l) > 0 {
			continue
		}
		errs = append(errs, admin.ReloadError{At: l.Pos.String(), Message: fmt.Sprintf(
			"listener %s would serve no routes (it serves %d now): refused, as an emptied or half-written route file would cause it; to empty it on purpose, reload with POST /api/reload?allow_empty=1",
			l.Name, now)})
	}
	return errs
}

// adminSettings is the part of the admin block fixed at start.
func adminSettings(a *conf.Admin) [2]string {
	if a == nil {
		return [2]string{}
	}
	return [2]string{a.Listen, a.TokenFile}
}

// reloadErrors lists err's diagnostics, each with file:line:col, or err
// itself when it has none.
func reloadErrors(err error) []admin.ReloadError {
	var list *conf.ErrorList
	if !errors.As(err, &list) {
		return []admin.ReloadError{{Message: err.Error()}}
	}
	out := make([]admin.ReloadError, 0, len(list.Diagnostics()))
	for _, diag := range list.Diagnostics() {
		at := diag.Pos.File
		if diag.Pos.Line > 0 {
			at = diag.Pos.String()
		}
		out = append(out, admin.ReloadError{At: at, Message: diag.Msg, Source: diag.Source})
	}
	return out
}

// listenersChanged reports an error when next adds, removes or renames a
// listener or moves one to another address or protocol set: bound sockets
// cannot follow such a change without a restart.
func listenersChanged(bound, next []conf.Listener) error {
	if len(bound) != len(next) {
		return fmt.Errorf("the configuration has %d listeners, %d are bound: listener changes need a restart", len(next), len(bound))
	}
	for i, b := range bound {
		n := next[i]
		if b.Name != n.Name || b.Addr != n.Addr || !slices.Equal(b.Protocols, n.Protocols) {
			return fmt.Errorf("listener %s (%s %v) became %s (%s %v): listener changes need a restart",
				b.Name, b.Addr, b.Protocols, n.Name, n.Addr, n.Protocols)
		}
	}
	return nil
}
