package router

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/bodybuf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/jwt"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/stdhttp"
	"github.com/edgeway/edgeway/internal/tracing"
	"github.com/edgeway/edgeway/upstream"
)

// Options configures a Router.
type Options struct {
	// Log receives proxy errors (Warn) and client aborts (Debug). Nil
	// discards them.
	Log *slog.Logger
	// AccessLog receives one Info line per request. Nil turns the access
	// log off.
	AccessLog *slog.Logger
	// Metrics receives the traffic counters (register it with a
	// Prometheus registry). Nil turns them off.
	Metrics *Metrics
	// AccessQuery is what the access log writes of a query: "keep" (or
	// ""), "redact" or "drop" (conf.Log.AccessQuery).
	AccessQuery string
	// AccessLeaveOut is the share of successful requests whose line is
	// left out, 0 to 1 (1 - conf.Log.Sample); lines of errors (status 400
	// and up) and of requests slower than AccessSlowerThan are always
	// written. Zero writes every line.
	AccessLeaveOut float64
	// AccessSlowerThan: a request that took at least this long is always
	// logged, whatever the sampling. Zero: no such rule.
	AccessSlowerThan time.Duration
	// Tracer makes a span for each sampled request and sends upstream a
	// traceparent naming it (router/tracing.go). Nil turns tracing off:
	// traceparent and tracestate pass through untouched. The caller
	// shuts it down after the router.
	Tracer *tracing.Tracer
	// Members counts the live instances that share each rate limit (a
	// cluster's members): every limiter enforces rate/n and burst/n (at
	// least 1) of it, n read on each request, so it must be an atomic
	// load, never a remote call. Nil: each instance enforces the whole
	// limit.
	Members func() int
}

// Router serves HTTP requests from the live Snapshot. Its methods are safe
// for concurrent use.
type Router struct {
	log     *slog.Logger
	access  *slog.Logger
	metrics *Metrics
	query   string // Options.AccessQuery
	sample  lineSampler
	tracer  *tracing.Tracer
	members func() int // Options.Members

	mu      sync.Mutex // serialises Apply and Close
	set     *upstream.Set
	snap    atomic.Pointer[Snapshot]
	release *time.Timer // hands a replaced table's memory back; guarded by mu

	limits      map[string]*limitEntry                  // rate limiters by name; guarded by mu
	limitView   atomic.Pointer[map[string]*routeLimit]  // the live ones, for the metrics
	jwks        map[jwksKey]*jwt.Remote                 // key sets fetched from URLs; guarded by mu
	jwksView    atomic.Pointer[map[jwksKey]*jwt.Remote] // the live ones, for the metrics
	exchanges   sync.Pool                               // *exchange
	bufs        *bodybuf.Pool                           // request bodies held before forwarding (buffering.go)
	bufsApplied bool                                    // a buffers block was applied once (setBufferLimits)
	tunnels     tunnels
	splits      splitRegistry // split routes' runtime state (split.go)
	refusals    refusalLog
}

// New returns a router with an empty table: every request gets 404 until
// Apply succeeds.
func New(opts Options) *Router {
	r := &Router{log: opts.Log, access: opts.AccessLog, metrics: opts.Metrics, query: opts.AccessQuery,
		sample: newLineSampler(opts.AccessLeaveOut, opts.AccessSlowerThan), tracer: opts.Tracer, members: opts.Members, set: upstream.NewSet(),
		bufs: bodybuf.NewPool(bodybuf.Limits{})}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.set.SetLogger(r.log)
	if r.metrics != nil {
		r.metrics.pools = r.set.Pools
		r.metrics.limits = func() map[string]*routeLimit {
			if m := r.limitView.Load(); m != nil {
				return *m
			}
			return nil
		}
		r.metrics.buffers = r.bufs.Stats
		r.metrics.jwks = func() map[jwksKey]*jwt.Remote {
			if m := r.jwksView.Load(); m != nil {
				return *m
			}
			return nil
		}
	}
	r.snap.Store(&Snapshot{http: map[string]*httpListener{}, tcp: map[string]*tcpListener{}})
	r.exchanges.New = func() any { return newExchange(r) }
	return r
}

// Apply compiles cfg and makes it the live table. The new Snapshot is built
// completely before anything changes; if that fails the old table stays
// live and the error is returned. Then the upstream pools are synced (kept
// when unchanged, drained when gone) and the Snapshot is published with one
// atomic store. Requests already running finish on the table they started
// with.
func (r *Router) Apply(cfg *conf.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, err := Build(cfg)
	if err != nil {
		return fmt.Errorf("building routing table: %w", err)
	}
	s.attach(r.set.Sync(cfg.Upstreams))
	s.attachLimits(cfg.Routes, r.syncLimits(cfg.Limits))
	s.attachJWKS(r.syncJWKS(cfg))
	s.attachSplits(&r.splits, cfg, r.log, r.set.Pools())
	r.setBufferLimits(bufferLimits(cfg.Buffers))
	if r.metrics != nil {
		s.attachMetrics(r.metrics)
	}
	r.snap.Store(s)
	r.drainTunnels(s, cfg.TunnelDrain)
	r.releaseLater()
	return nil
}

// setBufferLimits applies the buffers block; a dir that changed and is a
// tmpfs is warned about once: its temporary files are memory.
func (r *Router) setBufferLimits(l bodybuf.Limits) {
	old := r.bufs.Limits().Dir
	r.bufs.SetLimits(l)
	if dir := r.bufs.Limits().Dir; (dir != old || !r.bufsApplied) && bodybuf.OnTmpfs(dir) {
		r.log.Warn("the buffers dir is a tmpfs: bodies spilled to its temporary files take memory, up to the disk cap; set buffers { dir PATH } on a disk",
			slog.String("dir", dir), slog.Int64("disk_cap", r.bufs.Limits().Disk))
	}
	r.bufsApplied = true
}

// bufferLimits maps the buffers block to the pool's limits (zero fields
// mean the same defaults in both).
func bufferLimits(b conf.Buffers) bodybuf.Limits {
	return bodybuf.Limits{Memory: b.Memory, Disk: b.Disk, PerBody: b.RequestMemory, Dir: b.Dir}
}

// BufferStats reports what request bodies held before forwarding take now
// (for tests and the admin API).
func (r *Router) BufferStats() bodybuf.Stats { return r.bufs.Stats() }

// releaseDelay is how long after the last Apply the memory of the tables
// it replaced is handed back to the kernel: long enough for the requests
// still running on an old table to finish, and for a burst of reloads to
// cost one release.
const releaseDelay = time.Second

// releaseLater schedules debug.FreeOSMemory after a swap. While a new
// table is built the old one is live too, so the collector's heap goal
// rises to about twice both; left alone, the runtime keeps that memory
// until its next collection, which an idle proxy may not run for two
// minutes, and RSS stays at the peak of the last reload. A forced
// collection once the old table is garbage brings RSS back to its level
// before the reload (cmd/edgeway TestReloadScale measures it).
func (r *Router) releaseLater() {
	if r.release == nil {
		r.release = time.AfterFunc(releaseDelay, debug.FreeOSMemory)
		return
	}
	r.release.Reset(releaseDelay)
}

// Pools returns the live upstream pools by name (for the admin API).
func (r *Router) Pools() map[string]*upstream.Pool { return r.set.Pools() }

// Snapshot returns the live table.
func (r *Router) Snapshot() *Snapshot { return r.snap.Load() }

// Proxy returns the handler for requests arriving on the named listener,
// for the front ends that fill edgeway's own request type. A listener the
// live configuration does not know answers 404.
func (r *Router) Proxy(listener string) httpmsg.Handler {
	return &listenerHandler{r: r, name: listener}
}

// Handler is Proxy for net/http servers (HTTP/2, tests): it adapts
// *http.Request to edgeway's request type.
func (r *Router) Handler(listener string) http.Handler {
	return stdhttp.Handler(r.Proxy(listener))
}

// Close drains every upstream pool. Requests in flight finish; the router
// must not be used afterwards.
func (r *Router) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.release != nil {
		r.release.Stop()
	}
	r.stopJWKS()
	r.set.Close()
}

var emptyListener = &httpListener{notFound: []byte(defaultNotFound)}

type listenerHandler struct {
	r    *Router
	name string
}

// ServeProxy loads the live Snapshot once and serves req from it.
func (h *listenerHandler) ServeProxy(w httpmsg.ResponseWriter, req *httpmsg.Request) {
	l := h.r.snap.Load().http[h.name]
	if l == nil {
		l = emptyListener
	}
	x := h.r.exchanges.Get().(*exchange)
	x.begin(w, req, l)
	defer h.r.finish(x)
	x.serve()
}

// finish runs when a request ends, also when it panicked. It closes the
// request body's gate (no upstream writer reads the body past this
// point), reports the outcome, writes the access log line and recycles
// the exchange. A panic is reported (logged with its stack, counted) and
// ends only this request: the exchange is not recycled (its state is
// unknown) and the front end is told to abort it (http.ErrAbortHandler:
// the HTTP/1 connection closes, the HTTP/2 or HTTP/3 stream is reset).
func (r *Router) finish(x *exchange) {
	p := recover()
	if p != nil {
		x.outcome = upstream.Abandoned
		if !panics.IsAbort(p) {
			panics.Report("request", p, slog.String("method", x.in.Method), slog.String("path", x.reqPath))
		}
	}
	joined := x.closeBody()
	x.releaseBody(joined)
	x.end()
	x.releaseSlots()
	if x.tc.span != nil {
		x.endSpan()
	}
	if x.l.stats != nil {
		x.count()
	}
	if r.access != nil {
		if d := time.Since(x.start); r.sample.keep(x.logStatus(), d) {
			r.logAccess(x, d)
		}
	}
	if p != nil {
		panic(http.ErrAbortHandler)
	}
	if !joined {
		// A body read that ignored its deadline still uses the exchange:
		// leave it to the garbage collector rather than reuse it.
		r.log.LogAttrs(context.Background(), slog.LevelError, "request body read did not stop at the end of its exchange",
			slog.String("route", x.rt.name), slog.Duration("waited", bodyJoinWait))
		return
	}
	// Lifetime: nothing outlives the exchange by now: the body gate is
	// closed (no upstream writer reads through it), the watchdog detached
	// (end), the upstream exchange over (its body closed), and every
	// string viewing the exchange's buffers was used or copied
	// (bytesString).
	x.reset()
	r.exchanges.Put(x)
}

// closeBody closes the current try's body gate (an earlier try's was
// closed when it was retried), interrupting a read of the client's body
// in progress with a read deadline in the past. False when that read did
// not return.
func (x *exchange) closeBody() bool {
	if x.gate == nil {
		return true
	}
	return x.gate.close(x.w.w)
}

// end reports the outcome to the server and releases the request's timer.
func (x *exchange) end() {
	x.wd.stop()
	x.recordSplit()
	if x.server != nil && !x.serverDone {
		x.server.Done(upstream.Result{Outcome: x.outcome, Status: x.resp.Status,
			ConnectFailed: x.errKind == errConnect, Latency: time.Since(x.upStart)})
	}
	if x.retrying {
		x.rt.pool.EndRetry()
	}
}
