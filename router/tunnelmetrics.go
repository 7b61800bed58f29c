package router

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// tunnelMetrics count tunnels (WebSocket and other upgrades, TLS
// passthrough) as they end. Tunnels are few beside requests, so plain
// Prometheus vectors do; their label values are bounded like the others:
// listener and route names from the configuration, three kinds and four
// ends.
type tunnelMetrics struct {
	count    *prometheus.CounterVec   // listener, route, kind, end
	bytes    *prometheus.CounterVec   // listener, route, direction
	duration *prometheus.HistogramVec // listener, kind

	mu   sync.Mutex
	seen map[[2]string]bool // the (listener, route) pairs with series, for pruning
}

func newTunnelMetrics() *tunnelMetrics {
	return &tunnelMetrics{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeway_tunnels_total",
			Help: "Tunnels ended, by listener, route, kind (websocket, upgrade, passthrough) and end (client_closed, server_closed: the side that ended or reset first; error; drained: a reload removed its route or server)."},
			[]string{"listener", "route", "kind", "end"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeway_tunnel_bytes_total",
			Help: "Bytes carried by ended tunnels, by listener, route and direction (client_to_server, server_to_client)."},
			[]string{"listener", "route", "direction"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "edgeway_tunnel_duration_seconds",
			Help:    "How long tunnels lasted, by listener and kind.",
			Buckets: []float64{.1, 1, 10, 60, 300, 1800, 3600, 4 * 3600, 24 * 3600}},
			[]string{"listener", "kind"}),
		seen: map[[2]string]bool{},
	}
}

// ended counts a tunnel that ended after d.
func (t *tunnelMetrics) ended(listener, route, kind string, e httpmsg.TunnelEnd, d time.Duration) {
	t.mu.Lock()
	t.seen[[2]string{listener, route}] = true
	t.mu.Unlock()
	// The count last: a scrape that sees the tunnel counted sees its
	// bytes and duration too.
	t.bytes.WithLabelValues(listener, route, "client_to_server").Add(float64(e.ToUpstream))
	t.bytes.WithLabelValues(listener, route, "server_to_client").Add(float64(e.ToClient))
	t.duration.WithLabelValues(listener, kind).Observe(d.Seconds())
	t.count.WithLabelValues(listener, route, kind, e.How).Inc()
}

// keepOnly drops the series of listeners and routes that s lacks.
func (t *tunnelMetrics) keepOnly(s *Snapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.seen {
		listener, route := k[0], k[1]
		if s.hasListener(listener) && s.hasRoute(listener, route) {
			continue
		}
		delete(t.seen, k)
		t.count.DeletePartialMatch(prometheus.Labels{"listener": listener, "route": route})
		t.bytes.DeletePartialMatch(prometheus.Labels{"listener": listener, "route": route})
		if !s.hasListener(listener) {
			t.duration.DeletePartialMatch(prometheus.Labels{"listener": listener})
		}
	}
}

func (t *tunnelMetrics) describe(ch chan<- *prometheus.Desc) {
	t.count.Describe(ch)
	t.bytes.Describe(ch)
	t.duration.Describe(ch)
}

func (t *tunnelMetrics) collect(ch chan<- prometheus.Metric) {
	t.count.Collect(ch)
	t.bytes.Collect(ch)
	t.duration.Collect(ch)
}

// hasListener reports whether s serves a listener of that name.
func (s *Snapshot) hasListener(name string) bool {
	return s.http[name] != nil || s.tcp[name] != nil
}

// hasRoute reports whether listener has an HTTP or tcp route of that name.
func (s *Snapshot) hasRoute(listener, name string) bool {
	if hl := s.http[listener]; hl != nil {
		for _, rt := range hl.routes {
			if rt.name == name {
				return true
			}
		}
	}
	if tl := s.tcp[listener]; tl != nil {
		for _, rt := range tl.routes {
			if rt.Name == name {
				return true
			}
		}
	}
	return false
}
