package router

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/jwt"
)

// Key sets fetched from URLs (`jwt { jwks https://... }`): one jwt.Remote
// per URL and refresh interval, shared by every route that names it and
// kept across reloads, so that a reload neither refetches nor forgets a
// set; one no route names any more is stopped.

// jwksKey names one Remote.
type jwksKey struct {
	url     string
	refresh time.Duration
	ca      string // jwks_ca's PEM; "": the system roots
}

// syncJWKS makes the router's remotes those cfg's routes and named jwt
// policies name, starting new ones and stopping the rest. Under r.mu.
func (r *Router) syncJWKS(cfg *conf.Config) map[jwksKey]*jwt.Remote {
	next := map[jwksKey]*jwt.Remote{}
	add := func(c *conf.JWT) {
		if c == nil || c.JWKSURL == "" {
			return
		}
		k := jwksKey{url: c.JWKSURL, refresh: c.JWKSRefresh, ca: string(c.JWKSCA)}
		if next[k] != nil {
			return
		}
		rm := r.jwks[k]
		if rm == nil {
			rm = &jwt.Remote{URL: k.url, Refresh: k.refresh, Log: r.log, Client: jwksClient(c.JWKSCA)}
			rm.Start()
		}
		next[k] = rm
	}
	for i := range cfg.Routes {
		add(cfg.Routes[i].JWT)
	}
	for i := range cfg.JWTs {
		add(&cfg.JWTs[i])
	}
	for k, rm := range r.jwks {
		if next[k] == nil {
			rm.Stop()
		}
	}
	r.jwks = next
	view := make(map[jwksKey]*jwt.Remote, len(next))
	for k, rm := range next {
		view[k] = rm
	}
	r.jwksView.Store(&view)
	return next
}

// jwksClient is the client that fetches a jwks URL: nil (jwt.Remote's
// default, the system roots) without a CA; else one that trusts only
// the PEM certificates of ca (conf checked that it holds some).
func jwksClient(ca []byte) *http.Client {
	if ca == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: 1, IdleConnTimeout: time.Minute,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// attachJWKS gives each route of s with a jwks URL, and each named
// policy, its remote.
func (s *Snapshot) attachJWKS(remotes map[jwksKey]*jwt.Remote) {
	if len(remotes) == 0 {
		return
	}
	for _, p := range s.jwts {
		if p.url.url != "" {
			p.remote = remotes[p.url]
		}
	}
	for _, hl := range s.http {
		for _, rt := range hl.routes {
			if rt.jwt != nil && rt.jwt.url.url != "" {
				rt.jwt.remote = remotes[rt.jwt.url]
			}
		}
	}
}

// stopJWKS stops every remote (Close).
func (r *Router) stopJWKS() {
	for _, rm := range r.jwks {
		rm.Stop()
	}
	r.jwks = nil
}

var jwksFetches = prometheus.NewDesc("edgeway_jwks_fetches_total",
	"Fetches of a jwt block's jwks URL (query left out), by result (ok, failed); a failed one keeps the last good key set.",
	[]string{"url", "result"}, nil)

// collectJWKS writes the live remotes' fetch counts.
func collectJWKS(ch chan<- prometheus.Metric, remotes map[jwksKey]*jwt.Remote) {
	seen := map[string][2]int64{}
	for k, rm := range remotes {
		ok, failed := rm.Stats()
		l := metricURL(k.url)
		c := seen[l]
		seen[l] = [2]int64{c[0] + ok, c[1] + failed}
	}
	for l, c := range seen {
		ch <- prometheus.MustNewConstMetric(jwksFetches, prometheus.CounterValue, float64(c[0]), l, "ok")
		ch <- prometheus.MustNewConstMetric(jwksFetches, prometheus.CounterValue, float64(c[1]), l, "failed")
	}
}

// metricURL is u without user information or query, which may carry
// secrets.
func metricURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}
