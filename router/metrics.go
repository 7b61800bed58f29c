package router

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/internal/bodybuf"
	"github.com/edgeway/edgeway/internal/jwt"
	"github.com/edgeway/edgeway/upstream"
)

// Traffic metrics. A request adds to plain atomic counters that its route,
// listener and upstream server hold; nothing allocates or locks on the
// request path. Metrics is a prometheus.Collector that turns the counters
// into series when /metrics is scraped. The counters are kept by name
// (route, listener, upstream and server address), so they survive a reload
// while the name is in the files, as Prometheus expects of counters; a
// reload that removes the name drops them (keepOnly), so that /metrics
// does not list a route or server that is gone.
//
// Label values are bounded: route, listener and upstream names and server
// addresses come from the configuration, methods fold into ten values and
// statuses into classes; a raw path or a client address is never a label.

// Metrics collects the traffic counters of a Router (Options.Metrics).
// Its methods are safe for concurrent use.
type Metrics struct {
	mu        sync.Mutex
	listeners map[string]*listenerStats
	servers   map[serverKey]*serverStats
	upstreams map[string]*upstreamStats
	pools     func() map[string]*upstream.Pool // the router's live pools, for state gauges
	limits    func() map[string]*routeLimit    // the router's live rate limits
	buffers   func() bodybuf.Stats             // the router's body buffers
	jwks      func() map[jwksKey]*jwt.Remote   // the router's key sets from URLs

	retries, budget, overLimit, mirrored, state, inFlight, ejections, transitions *prometheus.Desc

	bufBytes, bufSpills, bufOverflows *prometheus.Desc
	// respBuf*: the response body queues (respbuf.go)
	respBufBytes, respBufSpills, respBufOverflows *prometheus.Desc

	requests, upRequests, upErrors, bytesIn, bytesOut *prometheus.Desc
	duration, upDuration                              *prometheus.Desc

	refused *prometheus.CounterVec // requests the listeners answered themselves
	tunnels *tunnelMetrics

	refusedSeen sync.Map // listener names with refused series, for pruning
}

// NewMetrics returns an empty collector; register it with a
// prometheus.Registerer and pass it in Options.Metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		listeners: map[string]*listenerStats{},
		servers:   map[serverKey]*serverStats{},
		upstreams: map[string]*upstreamStats{},
		retries: prometheus.NewDesc("edgeway_upstream_retries_total",
			"Tries sent again to another server, by upstream.", []string{"upstream"}, nil),
		mirrored: prometheus.NewDesc("edgeway_upstream_mirror_requests_total",
			"Copies of requests routes mirror to this upstream, by result (sent: answered; failed: no server or no valid answer; dropped: too many copies in flight; skipped: a body that could not be copied).",
			[]string{"upstream", "result"}, nil),
		budget: prometheus.NewDesc("edgeway_upstream_retry_budget_exhausted_total",
			"Retries not made because the upstream's retry budget was spent, by upstream.", []string{"upstream"}, nil),
		overLimit: prometheus.NewDesc("edgeway_upstream_limit_rejected_total",
			"Requests answered 503 at once because a pool limit was reached, by upstream and limit.",
			[]string{"upstream", "limit"}, nil),
		state: prometheus.NewDesc("edgeway_upstream_server_state",
			"1 for the state each upstream server is in, 0 for the others.", []string{"upstream", "server", "state"}, nil),
		inFlight: prometheus.NewDesc("edgeway_upstream_server_in_flight",
			"Requests in flight to each upstream server.", []string{"upstream", "server"}, nil),
		transitions: prometheus.NewDesc("edgeway_upstream_server_transitions_total",
			"State changes of each upstream server, by the state entered (ejected: an outlier ejection; open: its breaker opened; half-open, healthy, ...).",
			[]string{"upstream", "server", "to"}, nil),
		ejections: prometheus.NewDesc("edgeway_upstream_server_ejections",
			"Consecutive outlier ejections of each upstream server (the multiplier of its ejection time).",
			[]string{"upstream", "server"}, nil),
		requests: prometheus.NewDesc("edgeway_requests_total",
			"Requests answered, by listener, route (\"\" when none matched), method and code: the status class (1xx to 5xx), or 499 for a client that went away before the answer.",
			[]string{"listener", "route", "method", "code"}, nil),
		duration: prometheus.NewDesc("edgeway_request_duration_seconds",
			"Time from a request's head to the end of its response, by listener and route.",
			[]string{"listener", "route"}, nil),
		bytesIn: prometheus.NewDesc("edgeway_received_bytes_total",
			"Request body bytes received from clients, by listener.", []string{"listener"}, nil),
		bytesOut: prometheus.NewDesc("edgeway_sent_bytes_total",
			"Response body bytes sent to clients, by listener.", []string{"listener"}, nil),
		upRequests: prometheus.NewDesc("edgeway_upstream_requests_total",
			"Requests sent to upstream servers that were answered, by upstream, server and code: the status class (1xx to 5xx).",
			[]string{"upstream", "server", "code"}, nil),
		upErrors: prometheus.NewDesc("edgeway_upstream_errors_total",
			"Upstream exchanges that failed, by upstream, server and kind (connect, timeout, response, aborted).",
			[]string{"upstream", "server", "kind"}, nil),
		upDuration: prometheus.NewDesc("edgeway_upstream_request_duration_seconds",
			"Time from sending a request to an upstream server to the end of its response, by upstream and server.",
			[]string{"upstream", "server"}, nil),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeway_requests_refused_total",
			Help: "Requests a listener answered itself before routing (malformed, too large, smuggling, bad Host, unsupported version), by listener, protocol and reason."},
			[]string{"listener", "protocol", "reason"}),
		tunnels: newTunnelMetrics(),
		bufBytes: prometheus.NewDesc("edgeway_buffer_bytes",
			"Bytes of request bodies held before forwarding (request buffering), by where: memory or disk.", []string{"where"}, nil),
		bufSpills: prometheus.NewDesc("edgeway_buffer_spills_total",
			"Request bodies that outgrew their memory and went on in a temporary file.", nil, nil),
		bufOverflows: prometheus.NewDesc("edgeway_buffer_overflow_total",
			"Request bodies that could not be held (the buffers' disk cap was reached, or a temporary file failed) and streamed instead.", nil, nil),
		respBufBytes: prometheus.NewDesc("edgeway_response_buffer_bytes",
			"Bytes of response bodies read from servers and not yet taken by their clients (response buffering), by where: memory or disk.", []string{"where"}, nil),
		respBufSpills: prometheus.NewDesc("edgeway_response_buffer_spills_total",
			"Response bodies whose clients fell behind past their memory, and that went on in a temporary file.", nil, nil),
		respBufOverflows: prometheus.NewDesc("edgeway_response_buffer_overflow_total",
			"Response bodies that outgrew response_max or the buffers' caps and streamed the rest at their client's pace.", nil, nil),
	}
}

// methods are the method label values; anything else is "other".
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "other"}

const numMethods = len(methods)

func methodIndex(m string) int {
	for i := range numMethods - 1 {
		if methods[i] == m {
			return i
		}
	}
	return numMethods - 1
}

// classes are the status class label values; 0 holds 499 (client gone).
var classes = [...]string{"499", "1xx", "2xx", "3xx", "4xx", "5xx"}

const numClasses = len(classes)

func classIndex(status int) int {
	if status == statusClientClosed || status < 100 || status > 599 {
		return 0
	}
	return status / 100
}

// Upstream error kinds.
const (
	errConnect = iota
	errTimeout
	errResponse
	errAborted
	numErrKinds
)

var errKinds = [numErrKinds]string{"connect", "timeout", "response", "aborted"}

// buckets are the duration histogram's upper bounds, in seconds.
var buckets = [...]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// histogram counts observations per bucket; sum is in nanoseconds.
type histogram struct {
	counts [len(buckets) + 1]atomic.Uint64 // the last is +Inf
	sum    atomic.Int64
}

func (h *histogram) observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(buckets[:], s)
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// metric returns the histogram as a constant metric (cumulative buckets).
func (h *histogram) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	cum := make(map[float64]uint64, len(buckets))
	var n uint64
	for i, b := range buckets {
		n += h.counts[i].Load()
		cum[b] = n
	}
	n += h.counts[len(buckets)].Load()
	return prometheus.MustNewConstHistogram(desc, n, float64(h.sum.Load())/1e9, cum, labels...)
}

// routeStats are the counters of one route on one listener (route ""
// holds the requests no route matched).
type routeStats struct {
	requests [numMethods][numClasses]atomic.Uint64
	duration histogram
}

type listenerStats struct {
	bytesIn, bytesOut atomic.Uint64
	routes            map[string]*routeStats // guarded by Metrics.mu
}

type serverKey struct{ upstream, addr string }

// upstreamStats are the counters of one upstream pool.
type upstreamStats struct {
	retries, budgetExhausted atomic.Uint64
	overLimit                [len(limits)]atomic.Uint64
	mirror                   [numMirrorResults]atomic.Uint64 // copies routes sent here (mirror)
}

// limits are the pool limits that refuse a request (label values).
var limits = [...]string{"max_requests", "max_connections", "max_pending"}

// upstream returns the counters of an upstream, making them once.
func (m *Metrics) upstream(name string) *upstreamStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.upstreams[name]
	if u == nil {
		u = &upstreamStats{}
		m.upstreams[name] = u
	}
	return u
}

type serverStats struct {
	requests [numClasses]atomic.Uint64
	errors   [numErrKinds]atomic.Uint64
	duration histogram
}

// keepOnly drops the counters that s does not use: listeners and routes
// it lacks, upstreams not in ups, servers not in keepServer. Requests still
// running on the table s replaced may count into dropped ones; those
// counts are lost with the series, as a restart would lose them.
func (m *Metrics) keepOnly(s *Snapshot, ups map[string]*upstreamStats, keepServer map[serverKey]bool) {
	m.tunnels.keepOnly(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refusedSeen.Range(func(k, _ any) bool {
		if name := k.(string); !s.hasListener(name) {
			m.refusedSeen.Delete(name)
			m.refused.DeletePartialMatch(prometheus.Labels{"listener": name})
		}
		return true
	})
	for name, ls := range m.listeners {
		hl := s.http[name]
		if hl == nil {
			delete(m.listeners, name)
			continue
		}
		live := map[string]bool{"": true}
		for _, rt := range hl.routes {
			live[rt.name] = true
		}
		for route := range ls.routes {
			if !live[route] {
				delete(ls.routes, route)
			}
		}
	}
	for name := range m.upstreams {
		if ups[name] == nil {
			delete(m.upstreams, name)
		}
	}
	for k := range m.servers {
		if !keepServer[k] {
			delete(m.servers, k)
		}
	}
}

// listener returns the counters of a listener, making them once.
func (m *Metrics) listener(name string) *listenerStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	ls := m.listeners[name]
	if ls == nil {
		ls = &listenerStats{routes: map[string]*routeStats{}}
		m.listeners[name] = ls
	}
	return ls
}

// route returns the counters of a route on a listener, making them once.
func (m *Metrics) route(ls *listenerStats, name string) *routeStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	rs := ls.routes[name]
	if rs == nil {
		rs = &routeStats{}
		ls.routes[name] = rs
	}
	return rs
}

// server returns the counters of an upstream server, making them once.
func (m *Metrics) server(upstream, addr string) *serverStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := serverKey{upstream, addr}
	s := m.servers[k]
	if s == nil {
		s = &serverStats{}
		m.servers[k] = s
	}
	return s
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.requests, m.duration, m.bytesIn, m.bytesOut, m.upRequests, m.upErrors, m.upDuration,
		m.retries, m.budget, m.overLimit, m.mirrored, m.state, m.inFlight, m.ejections, m.transitions, limitRequests, limitKeys, limitEvictions, jwksFetches,
		m.bufBytes, m.bufSpills, m.bufOverflows, m.respBufBytes, m.respBufSpills, m.respBufOverflows} {
		ch <- d
	}
	m.refused.Describe(ch)
	m.tunnels.describe(ch)
}

// Collect implements prometheus.Collector. Series whose count is zero are
// left out, so a route shows only the methods and classes it served.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.refused.Collect(ch)
	m.tunnels.collect(ch)
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, ls := range m.listeners {
		ch <- prometheus.MustNewConstMetric(m.bytesIn, prometheus.CounterValue, float64(ls.bytesIn.Load()), name)
		ch <- prometheus.MustNewConstMetric(m.bytesOut, prometheus.CounterValue, float64(ls.bytesOut.Load()), name)
		for route, rs := range ls.routes {
			m.collectRoute(ch, name, route, rs)
		}
	}
	for k, s := range m.servers {
		for c := range numClasses {
			if n := s.requests[c].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(m.upRequests, prometheus.CounterValue, float64(n), k.upstream, k.addr, classes[c])
			}
		}
		for e := range numErrKinds {
			if n := s.errors[e].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(m.upErrors, prometheus.CounterValue, float64(n), k.upstream, k.addr, errKinds[e])
			}
		}
		ch <- s.duration.metric(m.upDuration, k.upstream, k.addr)
	}
	for name, u := range m.upstreams {
		ch <- prometheus.MustNewConstMetric(m.retries, prometheus.CounterValue, float64(u.retries.Load()), name)
		ch <- prometheus.MustNewConstMetric(m.budget, prometheus.CounterValue, float64(u.budgetExhausted.Load()), name)
		for i, r := range mirrorResults {
			if n := u.mirror[i].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(m.mirrored, prometheus.CounterValue, float64(n), name, r)
			}
		}
		for i, l := range limits {
			if n := u.overLimit[i].Load(); n > 0 || i == 0 {
				ch <- prometheus.MustNewConstMetric(m.overLimit, prometheus.CounterValue, float64(n), name, l)
			}
		}
	}
	if m.pools != nil {
		m.collectPools(ch)
	}
	if m.limits != nil {
		collectLimits(ch, m.limits())
	}
	if m.buffers != nil {
		m.collectBuffers(ch)
	}
	if m.jwks != nil {
		collectJWKS(ch, m.jwks())
	}
}

// collectBuffers reports the request body buffers, read from the pool's
// atomics at scrape time.
func (m *Metrics) collectBuffers(ch chan<- prometheus.Metric) {
	s := m.buffers()
	ch <- prometheus.MustNewConstMetric(m.bufBytes, prometheus.GaugeValue, float64(s.Memory), "memory")
	ch <- prometheus.MustNewConstMetric(m.bufBytes, prometheus.GaugeValue, float64(s.Disk), "disk")
	ch <- prometheus.MustNewConstMetric(m.bufSpills, prometheus.CounterValue, float64(s.Spills))
	ch <- prometheus.MustNewConstMetric(m.bufOverflows, prometheus.CounterValue, float64(s.Overflows))
	r := s.Response
	ch <- prometheus.MustNewConstMetric(m.respBufBytes, prometheus.GaugeValue, float64(r.Memory), "memory")
	ch <- prometheus.MustNewConstMetric(m.respBufBytes, prometheus.GaugeValue, float64(r.Disk), "disk")
	ch <- prometheus.MustNewConstMetric(m.respBufSpills, prometheus.CounterValue, float64(r.Spills))
	ch <- prometheus.MustNewConstMetric(m.respBufOverflows, prometheus.CounterValue, float64(r.Overflows))
}

// collectPools reports each live server's state, in-flight requests and
// ejection count, read from the pools at scrape time.
func (m *Metrics) collectPools(ch chan<- prometheus.Metric) {
	for name, p := range m.pools() {
		for _, s := range p.Status().Servers {
			for st := upstream.Healthy; st <= upstream.Disabled; st++ {
				v := 0.0
				if s.State == st {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(m.state, prometheus.GaugeValue, v, name, s.Addr, st.String())
				if n := s.Entered[st]; n > 0 {
					ch <- prometheus.MustNewConstMetric(m.transitions, prometheus.CounterValue, float64(n), name, s.Addr, st.String())
				}
			}
			ch <- prometheus.MustNewConstMetric(m.inFlight, prometheus.GaugeValue, float64(s.InFlight), name, s.Addr)
			ch <- prometheus.MustNewConstMetric(m.ejections, prometheus.GaugeValue, float64(s.Ejections), name, s.Addr)
		}
	}
}

func (m *Metrics) collectRoute(ch chan<- prometheus.Metric, listener, route string, rs *routeStats) {
	for mi := range numMethods {
		for c := range numClasses {
			if n := rs.requests[mi][c].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(m.requests, prometheus.CounterValue, float64(n),
					listener, route, methods[mi], classes[c])
			}
		}
	}
	ch <- rs.duration.metric(m.duration, listener, route)
}

var _ prometheus.Collector = (*Metrics)(nil)
