package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/cluster"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/listeners/h3"
	"github.com/edgeway/edgeway/router"
	edgetls "github.com/edgeway/edgeway/tls"
)

// cmdRun serves the configuration until SIGTERM or SIGINT; SIGHUP (and a
// change to the files, and POST /api/reload) reloads the route files,
// SIGUSR1 reopens the log files.
func cmdRun(args []string, stderr io.Writer) int {
	file, cfg, code := loadFromFlags("run", args, stderr)
	if cfg == nil {
		return code
	}
	if diags := preflight(cfg); len(diags) > 0 {
		printLoadError(stderr, (*conf.ErrorList)(&diags))
		return 1
	}
	logs, err := newLoggers(cfg.Log, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway: %v\n", err)
		return 1
	}
	defer logs.close()
	panics.SetLogger(logs.log)
	for _, w := range cfg.Warnings {
		logs.log.Warn("configuration warning", "at", w.String())
	}
	applyRuntime(cfg.Runtime)
	d := newDaemon(file, cfg, logs)
	d.attempted = conf.Fingerprint(file)
	if err := d.metrics.Register(panics.Collector()); err != nil {
		logs.log.Error("start failed", "err", err)
		return 1
	}
	// Watch from right after the load, so that an edit made while the
	// listeners bind is not missed; SIGHUP still works when this fails.
	ctx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	d.watch(ctx)
	// The traffic counters run only when an admin server can show them.
	var traffic *router.Metrics
	if cfg.Admin != nil {
		traffic = router.NewMetrics()
		if err := d.metrics.Register(traffic); err != nil {
			logs.log.Error("start failed", "err", err)
			return 1
		}
	}
	tracer, err := newTracer(cfg.Tracing, logs.log)
	if err != nil {
		logs.log.Error("start failed", "err", err)
		return 1
	}
	if tracer != nil {
		defer stopTracer(tracer, logs.log) // after the router: its last spans are queued by then
		for _, c := range traceCollectors(tracer) {
			if err := d.metrics.Register(c); err != nil {
				logs.log.Error("start failed", "err", err)
				return 1
			}
		}
	}
	d.router = router.New(router.Options{Log: logs.log, AccessLog: logs.access, Metrics: traffic, AccessQuery: cfg.Log.AccessQuery,
		AccessLeaveOut: 1 - cfg.Log.Sample, AccessSlowerThan: cfg.Log.SlowerThan, Tracer: tracer, Members: d.liveMembers})
	defer d.router.Close()
	defer d.stopAdmin()
	defer d.stopCluster()
	if err := d.start(); err != nil {
		logs.log.Error("start failed", "err", err)
		return 1
	}
	return d.wait()
}

// daemon is one running edgeway: its live configuration, router,
// listeners and admin server. Only the goroutine running wait changes it;
// the admin server reads it through live.
type daemon struct {
	file    string
	cfg     *conf.Config // the live configuration, as wait's goroutine sees it
	log     *slog.Logger
	logs    *loggers
	router  *router.Router
	store   *edgetls.Store               // certificates; nil without a tls block
	own     map[string]*edgetls.Store    // listeners' own certificates, by listener; made at start
	acme    *acmeState                   // the ACME client; nil without an acme block
	cluster *clusterState                // etcd membership; nil without a cluster block
	members atomic.Pointer[cluster.Node] // the cluster node the rate limits share by; nil without one
	servers []*listeners.Server
	h3      map[string]*h3.Server // QUIC listeners by listener name, bound at start
	bound   []conf.Listener       // listeners as bound at start; reload cannot change them
	errc    chan error
	changed chan struct{} // the configuration files changed; nil when not watching

	admin      *admin.Server // nil without an admin block
	metrics    *admin.Metrics
	live       atomic.Pointer[liveConfig]
	generation int
	attempted  string // conf.Fingerprint of the files last loaded or refused
	dropped    atomic.Pointer[[]droppedOverride]
	boundAddrs atomic.Pointer[[]string] // each listener's bound address, once all are bound
	lastReload atomic.Pointer[admin.ReloadResult]
	reloads    chan reloadRequest // POST /api/reload, served by wait
	stopping   chan struct{}      // closed when shutdown begins
}

func newDaemon(file string, cfg *conf.Config, logs *loggers) *daemon {
	return &daemon{
		file: file, cfg: cfg, log: logs.log, logs: logs,
		metrics:  admin.NewMetrics(version),
		reloads:  make(chan reloadRequest),
		stopping: make(chan struct{}),
	}
}

// watch starts watching the configuration files; a change makes wait
// reload.
func (d *daemon) watch(ctx context.Context) {
	w, err := conf.NewWatcher(d.file, conf.WatchOptions{Log: d.log})
	if err != nil {
		d.log.Warn("not watching the configuration files; reload with SIGHUP", "err", err)
		return
	}
	d.changed = make(chan struct{}, 1)
	panics.Go("configuration watcher", func() {
		w.Run(ctx, func() {
			select {
			case d.changed <- struct{}{}: // wait() reloads, so reloads never overlap
			default: // one is already pending
			}
		})
	})
}

// start applies the configuration, starts the admin server and binds
// every listener before serving any, so that a bad address fails the
// start as a whole. /readyz turns 200 once all of that is done.
func (d *daemon) start() error {
	if err := d.loadCertificates(d.cfg); err != nil {
		return err
	}
	if err := makeBufferDir(d.cfg); err != nil {
		return err
	}
	if err := d.router.Apply(d.cfg); err != nil {
		return fmt.Errorf("applying configuration: %w", err)
	}
	d.setLive(d.cfg)
	// Before the cluster: in one, the cluster's route shares win over
	// this instance's journal.
	d.replayRouteOverrides()
	if err := d.startCluster(); err != nil {
		return err
	}
	// After the cluster: with one, the ACME storage is its etcd.
	if err := d.newACME(d.cfg); err != nil {
		return err
	}
	d.replayOverrides()
	if err := d.startAdmin(); err != nil {
		return err
	}
	for _, lc := range d.cfg.Listeners {
		s, err := d.listen(lc)
		if err != nil {
			d.closeAll()
			return fmt.Errorf("%s: listener %s: %w", lc.Pos, lc.Name, err)
		}
		d.servers = append(d.servers, s)
	}
	d.bound = d.cfg.Listeners
	addrs := make([]string, len(d.servers))
	for i, s := range d.servers {
		addrs[i] = s.Addr().String()
	}
	d.boundAddrs.Store(&addrs)
	d.errc = make(chan error, len(d.servers)+len(d.h3))
	for i, s := range d.servers {
		d.log.Info("listening", "listener", d.cfg.Listeners[i].Name, "addr", s.Addr().String())
		d.metrics.Register(connectionsGauge(d.cfg.Listeners[i].Name, s))
		if lc := d.cfg.Listeners[i]; isTLS(lc) || lc.ProxyProtocol != nil {
			d.metrics.Register(newFrontCollector(lc.Name, s))
		}
		panics.Go("listener", func() { d.errc <- s.Serve() })
	}
	d.serveH3()
	if err := d.startACME(); err != nil {
		d.closeAll()
		return err
	}
	if d.admin != nil {
		d.admin.SetReady()
	}
	return nil
}

func (d *daemon) closeAll() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, s := range d.servers {
		s.Shutdown(ctx)
	}
	d.shutdownH3(ctx)
}

// wait handles signals, file changes and API reloads until the daemon
// stops, and returns the exit code.
func (d *daemon) wait() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	for {
		select {
		case sig := <-sigs:
			switch sig {
			case syscall.SIGHUP:
				d.reloadChanged("signal")
			case syscall.SIGUSR1:
				d.reopenLogs()
			default:
				return d.stop(sig, sigs)
			}
		case <-d.changed:
			d.reloadChanged("watch")
		case req := <-d.reloads:
			req.done <- d.reload("api", req.opts)
		case err := <-d.errc:
			if err != nil {
				d.log.Error("listener failed", "err", err)
				close(d.stopping)
				d.shutdown()
				return 1
			}
		}
	}
}

func (d *daemon) reopenLogs() {
	if err := d.logs.reopen(); err != nil {
		d.log.Error("reopening log files", "err", err)
		return
	}
	d.log.Info("log files reopened")
}

// stop shuts down on sig: /readyz turns 503 at once, traffic is served
// for ShutdownDelay (a second SIGTERM or SIGINT cuts it short), then the
// listeners drain within ShutdownGrace.
func (d *daemon) stop(sig os.Signal, sigs <-chan os.Signal) int {
	close(d.stopping)
	if d.admin != nil {
		d.admin.SetDraining()
	}
	d.log.Info("shutting down", "signal", sig.String(), "delay", d.cfg.ShutdownDelay.String(), "grace", d.cfg.ShutdownGrace.String())
	if d.cfg.ShutdownDelay > 0 {
		d.delay(sigs)
	}
	return d.shutdown()
}

// delay serves on for ShutdownDelay, so that the load balancer sees
// /readyz fail and stops sending before the listeners close.
func (d *daemon) delay(sigs <-chan os.Signal) {
	t := time.NewTimer(d.cfg.ShutdownDelay)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return
		case sig := <-sigs:
			switch sig {
			case syscall.SIGUSR1:
				d.reopenLogs()
			case syscall.SIGTERM, syscall.SIGINT:
				d.log.Info("shutdown delay cut short", "signal", sig.String())
				return
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
		panics.Go("listener shutdown", func() {
			err := errShutdownPanicked // what done gets if Shutdown panics
			defer func() { done <- err }()
			err = s.Shutdown(ctx)
		})
	}
	d.shutdownH3(ctx)
	d.stopACME()
	for range d.servers {
		switch err := <-done; {
		case errors.Is(err, context.DeadlineExceeded):
			// The requests still in flight were cut: say so, and why.
			d.log.Warn("shutdown_grace ended before every request finished; the rest were cut",
				"shutdown_grace", d.cfg.ShutdownGrace.String(), "err", err)
		case err != nil:
			d.log.Error("shutdown", "err", err)
			code = 1
		}
	}
	d.log.Info("stopped")
	return code
}

var errShutdownPanicked = errors.New("listener shutdown panicked")
