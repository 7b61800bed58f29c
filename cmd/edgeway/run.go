package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/listeners/engine"
	"github.com/edgeway/edgeway/router"
)

// cmdRun serves the configuration until SIGTERM or SIGINT; SIGHUP reloads
// the route files.
func cmdRun(args []string, stderr io.Writer) int {
	file, cfg, code := loadFromFlags("run", args, stderr)
	if cfg == nil {
		return code
	}
	logs, err := newLoggers(cfg.Log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway: %v\n", err)
		return 1
	}
	defer logs.close()
	for _, w := range cfg.Warnings {
		logs.log.Warn("configuration warning", "at", w.String())
	}
	engine.ApplyRuntime(cfg.Runtime)
	d := &daemon{file: file, cfg: cfg, log: logs.log}
	// Watch from right after the load, so that an edit made while the
	// listeners bind is not missed; SIGHUP still works when this fails.
	ctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	if w, err := conf.NewWatcher(file, conf.WatchOptions{Log: logs.log}); err != nil {
		logs.log.Warn("not watching the configuration files; reload with SIGHUP", "err", err)
	} else {
		d.changed = make(chan struct{}, 1)
		go w.Run(ctx, func() {
			select {
			case d.changed <- struct{}{}: // wait() reloads, so reloads never overlap
			default: // one is already pending
			}
		})
	}
	d.router = router.New(router.Options{Log: logs.log, AccessLog: logs.access})
	defer d.router.Close()
	if err := d.start(); err != nil {
		logs.log.Error("start failed", "err", err)
		return 1
	}
	return d.wait()
}

// daemon is one running edgeway: its live configuration, router and
// listeners.
type daemon struct {
	file    string
	cfg     *conf.Config
	log     *slog.Logger
	router  *router.Router
	servers []*listeners.Server
	bound   []conf.Listener // listeners as bound at start; reload cannot change them
	errc    chan error
	changed chan struct{} // the configuration files changed; nil when not watching
}

// start applies the configuration and binds every listener before serving
// any, so that a bad address fails the start as a whole.
func (d *daemon) start() error {
	if err := d.router.Apply(d.cfg); err != nil {
		return fmt.Errorf("applying configuration: %w", err)
	}
	for _, lc := range d.cfg.Listeners {
		s, err := listeners.Listen(lc, d.router.Proxy(lc.Name), d.log)
		if err != nil {
			d.closeAll()
			return fmt.Errorf("listener %s: %w", lc.Name, err)
		}
		d.servers = append(d.servers, s)
	}
	d.bound = d.cfg.Listeners
	d.errc = make(chan error, len(d.servers))
	for i, s := range d.servers {
		d.log.Info("listening", "listener", d.cfg.Listeners[i].Name, "addr", s.Addr().String())
		go func() { d.errc <- s.Serve() }()
	}
	return nil
}

func (d *daemon) closeAll() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range d.servers {
		s.Shutdown(ctx)
	}
}

// wait handles signals until the daemon stops and returns the exit code.
func (d *daemon) wait() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				d.reload()
				continue
			}
			d.log.Info("shutting down", "signal", sig.String(), "grace", d.cfg.ShutdownGrace.String())
			return d.shutdown()
		case <-d.changed:
			d.log.Info("configuration files changed; reloading")
			d.reload()
		case err := <-d.errc:
			if err != nil {
				d.log.Error("listener failed", "err", err)
				d.shutdown()
				return 1
			}
		}
	}
}

// shutdown stops every listener: in-flight requests get ShutdownGrace to
// finish, then their connections are closed.
func (d *daemon) shutdown() int {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownGrace)
	defer cancel()
	code := 0
	done := make(chan error, len(d.servers))
	for _, s := range d.servers {
		go func() { done <- s.Shutdown(ctx) }()
	}
	for range d.servers {
		if err := <-done; err != nil && !errors.Is(err, context.DeadlineExceeded) {
			d.log.Error("shutdown", "err", err)
			code = 1
		}
	}
	d.log.Info("stopped")
	return code
}

// reload re-reads the configuration files; only a configuration that loads
// and validates whole replaces the live routes. Listener changes need a
// restart and are reported, not applied.
func (d *daemon) reload() {
	cfg, err := conf.Load(d.file)
	if err != nil {
		var list *conf.ErrorList
		if errors.As(err, &list) {
			for _, diag := range list.Diagnostics() {
				d.log.Error("reload refused; old routes stay live", "at", diag.String())
			}
		} else {
			d.log.Error("reload refused; old routes stay live", "err", err)
		}
		return
	}
	if err := listenersChanged(d.bound, cfg.Listeners); err != nil {
		d.log.Error("reload refused; old routes stay live", "err", err)
		return
	}
	if !sameSockets(d.bound, cfg.Listeners) {
		d.log.Warn("listener socket settings changed (timeouts, limits, socket options); they take effect on restart, routes are reloaded now")
	}
	for _, w := range cfg.Warnings {
		d.log.Warn("configuration warning", "at", w.String())
	}
	if err := d.router.Apply(cfg); err != nil {
		d.log.Error("reload refused; old routes stay live", "err", err)
		return
	}
	d.cfg = cfg
	d.log.Info("reloaded", "routes", len(cfg.Routes), "upstreams", len(cfg.Upstreams))
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

// sameSockets reports whether the settings fixed when a listener's socket
// and server were made are unchanged. The others (trusted_proxies,
// normalize, not_found_body, max_body_bytes) belong to the routing table
// and follow a reload.
func sameSockets(bound, next []conf.Listener) bool {
	for i, b := range bound {
		n := next[i]
		if b.ReadHeaderTimeout != n.ReadHeaderTimeout || b.IdleTimeout != n.IdleTimeout ||
			b.MaxHeaderBytes != n.MaxHeaderBytes || b.MaxConns != n.MaxConns || b.Backlog != n.Backlog ||
			b.ReusePort != n.ReusePort || b.NoDelay != n.NoDelay {
			return false
		}
	}
	return true
}
