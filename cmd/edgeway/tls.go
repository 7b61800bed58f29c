package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/listeners/sniff"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
	edgetls "github.com/edgeway/edgeway/tls"
)

// isTLS reports whether a listener terminates or passes through TLS.
func isTLS(lc conf.Listener) bool { return slices.Contains(lc.Protocols, "tls") }

// loadCertificates loads the tls block's certificates into the store (at
// start and on every reload): a file that fails keeps every certificate
// served as it was, and the error refuses the reload.
func (d *daemon) loadCertificates(cfg *conf.Config) error {
	if cfg.TLS != nil || d.store != nil {
		if d.store == nil {
			d.store = edgetls.NewStore(d.log)
		}
		if err := d.store.Load(cfg.TLS); err != nil {
			return fmt.Errorf("certificates: %w", err)
		}
	}
	for _, lc := range cfg.Listeners {
		if lc.TLS == nil || lc.TLS.Certificates == nil {
			continue
		}
		s := d.own[lc.Name]
		if s == nil && d.bound == nil { // stores are made at start only: tls is restart-class
			if d.own == nil {
				d.own = map[string]*edgetls.Store{}
			}
			s = edgetls.NewStore(d.log)
			d.own[lc.Name] = s
		}
		if s == nil {
			continue
		}
		if err := s.Load(lc.TLS.Certificates); err != nil {
			return fmt.Errorf("listener %s certificates: %w", lc.Name, err)
		}
	}
	return nil
}

// storeFor is the store whose certificates listener lc serves: its own
// when its tls block has certificates, else the top-level one (nil when
// there is none).
func (d *daemon) storeFor(lc conf.Listener) *edgetls.Store {
	if s := d.own[lc.Name]; s != nil {
		return s
	}
	return d.store
}

// certificates lists what every store serves: the top-level one's, then
// each listener's own.
func (d *daemon) certificates() []edgetls.CertInfo {
	out := []edgetls.CertInfo{}
	if d.store != nil {
		out = append(out, d.store.List()...)
	}
	for _, name := range slices.Sorted(maps.Keys(d.own)) {
		out = append(out, d.own[name].List()...)
	}
	return out
}

// listen binds one listener with what it serves: the router, or the
// HTTPS redirect shortcut; on a TLS listener the store's certificates and
// the tcp routes' passthrough.
func (d *daemon) listen(lc conf.Listener) (*listeners.Server, error) {
	var h httpmsg.Handler = d.router.Proxy(lc.Name)
	if lc.RedirectHTTPS > 0 {
		h = router.RedirectHTTPS(lc.RedirectHTTPS)
	}
	h = d.acmeWrap(lc, h)
	if err := d.bindH3(lc, h); err != nil {
		return nil, err
	}
	h = d.h3Wrap(lc, h)
	o := listeners.Options{Refused: d.router.Refused}
	if isTLS(lc) {
		store := d.storeFor(lc)
		if store == nil {
			return nil, errors.New("a TLS listener needs a tls block with certificates")
		}
		tc, err := store.ServerConfig(lc.TLS, nil)
		if err != nil {
			return nil, err
		}
		o.TLS = tc
		o.Passthrough = d.passthrough(lc.Name, terminateConfig(tc))
	}
	return listeners.ListenWith(lc, h, d.log, o)
}

// passthrough returns the listener's hook for tcp routes: a ClientHello a
// tcp route claims is sent on, raw, to a server of the route's pool, or
// with `tls terminate` handshaken with term and sent on as plaintext.
func (d *daemon) passthrough(listener string, term *tls.Config) func(context.Context, *sniff.Hello, netip.AddrPort, netip.AddrPort) (net.Conn, error) {
	return func(ctx context.Context, hello *sniff.Hello, client, local netip.AddrPort) (net.Conn, error) {
		if !d.router.Snapshot().HasTCPRoutes(listener) {
			return nil, listeners.ErrNoRoute
		}
		h := &rule.TCPHello{SNI: hello.SNI, ALPN: hello.ALPN, ClientIP: client.Addr()}
		c, err := d.router.DialTCP(ctx, listener, h, client, local)
		if errors.Is(err, router.ErrNoTCPRoute) {
			return nil, listeners.ErrNoRoute
		}
		if err != nil {
			return nil, err
		}
		d.log.Debug("passthrough", "listener", listener, "sni", h.SNI, "route", c.Route, "server", c.Server, "client", client.String(), "terminate", c.Terminate)
		if c.Terminate {
			return terminate(d.log, term, c.Conn, c.Route), nil
		}
		return c.Conn, nil
	}
}

// certificateList is GET /api/certificates.
type certificateList struct {
	Certificates []edgetls.CertInfo `json:"certificates"`
}

// registerCertificateAPI adds GET /api/certificates: every certificate
// the store holds, with its names, source, validity and OCSP staple.
func (d *daemon) registerCertificateAPI(srv *admin.Server) {
	srv.Handle("GET /api/certificates", func(*http.Request) (any, error) {
		return certificateList{Certificates: d.certificates()}, nil
	})
}

// certificateCollector exports when each served certificate expires
// (edgeway_certificate_not_after_timestamp_seconds, a Unix time as
// Prometheus' own timestamps are), for an alert well before a renewal
// that keeps failing runs out: `... - time() < 14 * 86400`.
type certificateCollector struct {
	d    *daemon
	desc *prometheus.Desc
}

func newCertificateCollector(d *daemon) *certificateCollector {
	return &certificateCollector{d: d, desc: prometheus.NewDesc("edgeway_certificate_not_after_timestamp_seconds",
		"When the certificate expires (its not-after time), as a Unix time in seconds, by first name, source and key type.",
		[]string{"name", "source", "key_type"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *certificateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *certificateCollector) Collect(ch chan<- prometheus.Metric) {
	seen := map[[3]string]bool{}
	for _, ci := range c.d.certificates() {
		key := [3]string{}
		if len(ci.Names) > 0 {
			key = [3]string{ci.Names[0], ci.Source, ci.KeyType}
		}
		if len(ci.Names) == 0 || seen[key] { // one series per label set
			continue
		}
		seen[key] = true
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(ci.NotAfter.Unix()), ci.Names[0], ci.Source, ci.KeyType)
	}
}

// frontCollector exports a TLS or PROXY protocol listener's stage counts:
// edgeway_tls_handshakes_total{listener,result}, and
// edgeway_front_connections_total{listener,outcome} for passthrough and
// refusals.
type frontCollector struct {
	name       string
	s          *listeners.Server
	hs, outcom *prometheus.Desc
}

func newFrontCollector(name string, s *listeners.Server) *frontCollector {
	l := prometheus.Labels{"listener": name}
	return &frontCollector{name: name, s: s,
		hs: prometheus.NewDesc("edgeway_tls_handshakes_total",
			"TLS handshakes on a listener, by result (ok, failed: a bad or missing ClientHello, a failed or timed-out handshake).", []string{"result"}, l),
		outcom: prometheus.NewDesc("edgeway_front_connections_total",
			"Connections decided before HTTP, by outcome: passthrough, passthrough_failed (no server reachable), proxy_refused (untrusted peer or bad PROXY header), not_tls (plain HTTP on a TLS port).", []string{"outcome"}, l),
	}
}

// Describe implements prometheus.Collector.
func (c *frontCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.hs; ch <- c.outcom }

// Collect implements prometheus.Collector.
func (c *frontCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.FrontStats()
	for _, v := range []struct {
		d     *prometheus.Desc
		label string
		n     int64
	}{
		{c.hs, "ok", st.Handshakes}, {c.hs, "failed", st.HandshakeFailures},
		{c.outcom, "passthrough", st.PassedThrough}, {c.outcom, "passthrough_failed", st.PassthroughFailures},
		{c.outcom, "proxy_refused", st.ProxyRefused}, {c.outcom, "not_tls", st.NotTLS},
	} {
		ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n), v.label)
	}
}
