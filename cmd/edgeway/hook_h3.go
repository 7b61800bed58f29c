package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/alpn"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/listeners/h3"
)

// HTTP/3 hooks: listeners binds a TLS listener's QUIC side
// (listeners.ListenQUIC); the daemon keeps the servers, serves and shuts
// them down with the TCP ones, and exports their counts.

// h3Wrap wraps the handler of TCP listener lc (Alt-Svc on responses when
// the listener also serves HTTP/3).
func (d *daemon) h3Wrap(lc conf.Listener, h httpmsg.Handler) httpmsg.Handler {
	s := d.h3[lc.Name]
	if !listeners.ServesH3(lc) || s == nil {
		return h
	}
	return listeners.WithAltSvc(lc, h, s.Addr().(*net.UDPAddr).Port)
}

// bindH3 binds the QUIC listener of lc when its protocols include h3;
// serveH3 serves it once every listener is bound.
func (d *daemon) bindH3(lc conf.Listener, h httpmsg.Handler) error {
	if !listeners.ServesH3(lc) {
		return nil
	}
	store := d.storeFor(lc)
	if store == nil {
		return errors.New("a TLS listener needs a tls block with certificates")
	}
	tc, err := store.ServerConfig(lc.TLS, []string{alpn.H3})
	if err != nil {
		return err
	}
	s, err := listeners.ListenQUIC(lc, tc, h, d.log, d.router.Refused)
	if err != nil {
		return err
	}
	for _, w := range s.Warnings {
		d.log.Warn("quic socket buffer", "listener", lc.Name, "warning", w)
	}
	if d.h3 == nil {
		d.h3 = make(map[string]*h3.Server)
	}
	d.h3[lc.Name] = s
	return nil
}

// serveH3 serves the bound QUIC listeners; a failure ends the daemon
// like a TCP listener's.
func (d *daemon) serveH3() {
	for name, s := range d.h3 {
		d.metrics.Register(newQUICCollector(name, s))
		d.log.Info("listening quic", "listener", name, "addr", s.Addr().String())
		panics.Go("quic listener", func() {
			if err := s.Serve(); err != nil {
				d.errc <- fmt.Errorf("listener %s (quic): %w", name, err)
			}
		})
	}
}

// shutdownH3 closes the QUIC listeners gracefully: GOAWAY on every
// connection, in-flight requests finish within ctx, then the rest close.
func (d *daemon) shutdownH3(ctx context.Context) {
	var wg sync.WaitGroup
	for name, s := range d.h3 {
		wg.Go(func() {
			defer panics.Recover("quic shutdown")
			if err := s.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				d.log.Error("quic shutdown", "listener", name, "err", err)
			}
		})
	}
	wg.Wait()
}

// quicCollector exports a QUIC listener's counts:
// edgeway_quic_open_connections, edgeway_quic_connections_total{outcome}
// and edgeway_quic_handshakes_total{result}, edgeway_quic_requests_total.
type quicCollector struct {
	s                            *h3.Server
	open, conns, hs, reqs, early *prometheus.Desc
}

func newQUICCollector(name string, s *h3.Server) *quicCollector {
	l := prometheus.Labels{"listener": name}
	return &quicCollector{s: s,
		open:  prometheus.NewDesc("edgeway_quic_open_connections", "Open QUIC (HTTP/3) connections.", nil, l),
		conns: prometheus.NewDesc("edgeway_quic_connections_total", "QUIC connection attempts, by outcome: accepted, refused_source (max_conns_per_source), retry (asked to validate its address).", []string{"outcome"}, l),
		hs:    prometheus.NewDesc("edgeway_quic_handshakes_total", "QUIC handshakes, by result (ok, failed: failed or timed out).", []string{"result"}, l),
		reqs:  prometheus.NewDesc("edgeway_quic_requests_total", "HTTP/3 requests read.", nil, l),
		early: prometheus.NewDesc("edgeway_quic_early_rejected_total", "Requests in 0-RTT data answered 425 Too Early (unsafe methods).", nil, l),
	}
}

// Describe implements prometheus.Collector.
func (c *quicCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.conns
	ch <- c.hs
	ch <- c.reqs
	ch <- c.early
}

// Collect implements prometheus.Collector.
func (c *quicCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(st.Active))
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(st.Accepted), "accepted")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(st.RefusedSource), "refused_source")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(st.RetriesAsked), "retry")
	ch <- prometheus.MustNewConstMetric(c.hs, prometheus.CounterValue, float64(st.HandshakesOK), "ok")
	ch <- prometheus.MustNewConstMetric(c.hs, prometheus.CounterValue, float64(st.HandshakesFailed), "failed")
	ch <- prometheus.MustNewConstMetric(c.reqs, prometheus.CounterValue, float64(st.Requests))
	ch <- prometheus.MustNewConstMetric(c.early, prometheus.CounterValue, float64(st.EarlyRejected))
}
