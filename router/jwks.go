package router

import (
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
}

// syncJWKS makes the router's remotes those cfg's routes name, starting
// new ones and stopping the rest. Under r.mu.
func (r *Router) syncJWKS(routes []conf.Route) map[jwksKey]*jwt.Remote {
	next := map[jwksKey]*jwt.Remote{}
	for _, rc := range routes {
		if rc.JWT == nil || rc.JWT.JWKSURL == "" {
			continue
		}
		k := jwksKey{url: rc.JWT.JWKSURL, refresh: rc.JWT.JWKSRefresh}
		if next[k] != nil {
			continue
		}
		rm := r.jwks[k]
		if rm == nil {
			rm = &jwt.Remote{URL: k.url, Refresh: k.refresh, Log: r.log}
			rm.Start()
		}
		next[k] = rm
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

// attachJWKS gives each route of s with a jwks URL its remote.
func (s *Snapshot) attachJWKS(remotes map[jwksKey]*jwt.Remote) {
	if len(remotes) == 0 {
		return
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
