package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds edgeway's own Prometheus registry (not the global one)
// with the Go and process collectors, the build info and the reload
// metrics. Other parts add theirs with Register.
type Metrics struct {
	reg         *prometheus.Registry
	reloads     *prometheus.CounterVec
	duration    prometheus.Histogram
	lastSuccess prometheus.Gauge
	configInfo  *prometheus.GaugeVec

	mu   sync.Mutex // serialises SetConfig
	hash string
}

// NewMetrics returns a registry with the standard collectors and the
// reload metrics; version labels edgeway_build_info.
func NewMetrics(version string) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "edgeway_reloads_total",
			Help: "Configuration reloads tried since start, by result (ok: applied; error: refused, the old configuration stays live).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "edgeway_reload_duration_seconds",
			Help:    "Time from reading the configuration files to the new table being live, or to the refusal.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .5, 1, 2, 5, 10},
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "edgeway_last_reload_success_timestamp_seconds",
			Help: "Unix time the live configuration was made live (at start or by the last applied reload).",
		}),
		configInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "edgeway_config_info",
			Help: "Always 1; hash identifies the live configuration files (as GET /api/config shows it).",
		}, []string{"hash"}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "edgeway_build_info",
		Help:        "Always 1; the labels name the edgeway build.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
	})
	build.Set(1)
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("error")
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		build, m.reloads, m.duration, m.lastSuccess, m.configInfo,
	)
	return m
}

// Registry returns the registry /metrics serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Register adds a collector to the registry.
func (m *Metrics) Register(c prometheus.Collector) error {
	if err := m.reg.Register(c); err != nil {
		return fmt.Errorf("registering collector: %w", err)
	}
	return nil
}

// ObserveReload counts a reload and its duration.
func (m *Metrics) ObserveReload(r ReloadResult) {
	result := "ok"
	if !r.OK {
		result = "error"
	}
	m.reloads.WithLabelValues(result).Inc()
	m.duration.Observe(r.Duration)
}

// SetConfig records that the configuration with hash was made live at t.
func (m *Metrics) SetConfig(hash string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hash != hash {
		m.configInfo.Reset()
		m.configInfo.WithLabelValues(hash).Set(1)
		m.hash = hash
	}
	m.lastSuccess.Set(float64(t.UnixNano()) / 1e9)
}

// ConfigHash identifies a set of configuration files: the first 16 hex
// digits of the SHA-256 of their `sha256sum` listing, in load order.
func ConfigHash(files []File) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Path)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
