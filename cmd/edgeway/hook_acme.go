package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/acme"
	"github.com/edgeway/edgeway/cluster"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// ACME wiring: the tls block's acme block makes one acme.Manager per
// daemon, fed by the certificate store. Without an acme block every hook
// does nothing and no handler is wrapped.

// acmeState is the daemon's ACME client and its metrics.
type acmeState struct {
	mgr      *acme.Manager
	orders   *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// acmeFailureReasons are the reason label values of
// edgeway_acme_failures_total.
var acmeFailureReasons = []string{acme.ReasonRateLimited, acme.ReasonCAUnreachable, acme.ReasonChallengeFailed,
	acme.ReasonOrderRejected, acme.ReasonStorage, acme.ReasonOther}

// acmeChallengePrefix is the path of HTTP-01 challenges (RFC 8555 8.3).
const acmeChallengePrefix = "/.well-known/acme-challenge/"

// newACME makes the ACME client of cfg's acme block (none without one),
// after the certificate store is loaded; startACME starts it.
func (d *daemon) newACME(cfg *conf.Config) error {
	if cfg.TLS == nil || cfg.TLS.ACME == nil || d.store == nil {
		return nil
	}
	st := &acmeState{
		orders: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeway_acme_orders_total",
			Help: "ACME orders started, by name."}, []string{"name"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "edgeway_acme_failures_total",
			Help: "Failed ACME orders and renewals, by name and reason (rate_limited, ca_unreachable, challenge_failed, order_rejected, storage, other)."},
			[]string{"name", "reason"}),
	}
	mgr, err := d.newACMEManager(cfg, st)
	if err != nil {
		return fmt.Errorf("acme: %w", err)
	}
	st.mgr = mgr
	d.acme = st
	return nil
}

func (d *daemon) newACMEManager(cfg *conf.Config, st *acmeState) (*acme.Manager, error) {
	a := cfg.TLS.ACME
	hc, err := acmeHTTPClient(a.CARoot)
	if err != nil {
		return nil, err
	}
	storage, err := d.acmeStorage(cfg)
	if err != nil {
		return nil, err
	}
	return acme.New(acme.Config{
		Directory: a.Directory, Email: a.Email, AcceptTerms: a.AcceptTerms,
		EABKeyID: a.EABKeyID, EABHMAC: a.EABHMAC,
		Names: cfg.ACMENames(), Challenges: a.Challenges, KeyType: a.KeyType, RenewBefore: a.RenewBefore,
		HTTPClient: hc, Storage: storage, Store: d.store, Log: d.log,
		RetryMin: acmeRetryMin(),
		Observe: func(e acme.Event) {
			switch e.Kind {
			case "order":
				st.orders.WithLabelValues(e.Name).Inc()
				// A name's failure series start at 0 with its first
				// order, so that increase() counts its first failure.
				for _, r := range acmeFailureReasons {
					st.failures.WithLabelValues(e.Name, r)
				}
			case "failure":
				st.failures.WithLabelValues(e.Name, e.Reason).Inc()
			}
		},
	})
}

// acmeStorage is where the ACME state lives: in the cluster's etcd with a
// cluster block (shared by every instance; the acme block's storage
// folder is not used, `edgeway cluster import` moves it there), else the
// folder.
func (d *daemon) acmeStorage(cfg *conf.Config) (acme.Storage, error) {
	if d.cluster == nil {
		return acme.NewDir(cfg.TLS.ACME.Storage)
	}
	return cluster.NewACMEStore(d.cluster.node), nil
}

// acmeRetryMin is the first backoff after a failed order: 1 minute, or
// EDGEWAY_ACME_RETRY_MIN (a Go duration) for tests against a test CA.
func acmeRetryMin() time.Duration {
	if v, err := time.ParseDuration(os.Getenv("EDGEWAY_ACME_RETRY_MIN")); err == nil && v > 0 {
		return v
	}
	return 0
}

// acmeHTTPClient talks to the CA with timeouts; caRoot (a PEM file) adds
// trusted roots for a private or test CA.
func acmeHTTPClient(caRoot string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.ResponseHeaderTimeout = 30 * time.Second
	if caRoot != "" {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		b, err := os.ReadFile(caRoot)
		if err != nil {
			return nil, fmt.Errorf("acme: ca_root: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("acme: ca_root %s: no PEM certificate", caRoot)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}, nil
}

// acmeWrap wraps the handler of listener lc, so that HTTP-01 challenges
// are answered before routing and never reach an upstream.
func (d *daemon) acmeWrap(lc conf.Listener, h httpmsg.Handler) httpmsg.Handler {
	if d.acme == nil {
		return h
	}
	return &http01Handler{mgr: d.acme.mgr, next: h}
}

type http01Handler struct {
	mgr  *acme.Manager
	next httpmsg.Handler
}

// ServeProxy answers GET /.well-known/acme-challenge/TOKEN: the key
// authorization for a pending token, 404 for any other token.
func (h *http01Handler) ServeProxy(w httpmsg.ResponseWriter, req *httpmsg.Request) {
	token, ok := strings.CutPrefix(req.Path(), acmeChallengePrefix)
	if !ok {
		h.next.ServeProxy(w, req)
		return
	}
	ka, found := h.mgr.HTTP01(token)
	status, body := 200, ka
	if !found || (req.Method != "GET" && req.Method != "HEAD") {
		status, body = 404, "no such ACME challenge\n"
	}
	hdr := httpmsg.Header{{Name: "Content-Type", Value: "text/plain"}}
	if err := w.WriteHead(status, hdr, int64(len(body))); err != nil {
		return
	}
	if req.Method != "HEAD" {
		w.Write([]byte(body))
	}
}

// startACME registers the ACME metrics and starts obtaining and renewing
// certificates after the listeners are bound; it does not wait for any
// order.
func (d *daemon) startACME() error {
	st := d.acme
	if st == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{st.orders, st.failures} {
		if err := d.metrics.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return fmt.Errorf("acme: metrics: %w", err)
			}
		}
	}
	st.mgr.Start()
	return nil
}

// reloadACME gives the manager the names of a reloaded configuration
// (the acme block's other settings need a restart).
func (d *daemon) reloadACME(cfg *conf.Config) {
	if d.acme != nil {
		d.acme.mgr.SetNames(cfg.ACMENames())
	}
}

// sameACMESettings reports whether a and b have the same acme block, but
// for the names to order (the part a reload applies).
func sameACMESettings(a, b *conf.Config) bool {
	settings := func(c *conf.Config) *conf.ACME {
		if c.TLS == nil || c.TLS.ACME == nil {
			return nil
		}
		s := *c.TLS.ACME
		s.Names, s.Routes, s.Pos = nil, nil, conf.Pos{}
		return &s
	}
	return reflect.DeepEqual(settings(a), settings(b))
}

// stopACME stops the ACME manager at shutdown; an order in progress is
// abandoned with storage consistent.
func (d *daemon) stopACME() {
	if d.acme != nil {
		d.acme.mgr.Stop()
	}
}
