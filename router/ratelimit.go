package router

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/ratelimit"
)

// Rate limits (`limit NAME { ... }`, routes' `limit NAME`): one limiter
// per limit, shared by every route that names it, whatever their number,
// and kept across reloads while the limit's settings stay the same.

// routeLimit is one limit as a route applies it.
type routeLimit struct {
	name    string
	l       *ratelimit.Limiter
	key     string // client_ip, route, header, cookie
	keyName string
	policy  string // RateLimit-Policy value, built once
	quoted  string // the name as a structured-field string
}

// maxHeldSlots is how many limits with max_in_flight one route may name.
const maxHeldSlots = 4

type limitEntry struct {
	cfg conf.Limit
	rl  *routeLimit
}

// syncLimits makes the router's limiters those of cfg: a limit whose
// settings are unchanged keeps its limiter (and its buckets). Under r.mu.
func (r *Router) syncLimits(cfg []conf.Limit) map[string]*routeLimit {
	next := make(map[string]*limitEntry, len(cfg))
	out := make(map[string]*routeLimit, len(cfg))
	for _, c := range cfg {
		c.Pos = conf.Pos{}
		e := r.limits[c.Name]
		if e == nil || e.cfg != c {
			rl := &routeLimit{name: c.Name, l: ratelimit.NewWithCap(c.Rate, c.Per, c.Burst, c.MaxKeys, c.MaxInFlight),
				key: c.Key, keyName: c.KeyName, quoted: strconv.Quote(c.Name)}
			rl.l.SetMembers(r.members)
			if c.Rate > 0 {
				window := max(int64(c.Per.Seconds())*int64(c.Burst)/int64(c.Rate), 1)
				rl.policy = rl.quoted + ";q=" + strconv.Itoa(c.Burst) + ";w=" + strconv.FormatInt(window, 10)
			}
			e = &limitEntry{cfg: c, rl: rl}
		}
		next[c.Name], out[c.Name] = e, e.rl
	}
	r.limits = next
	r.limitView.Store(&out)
	return out
}

// attachLimits gives each route of s the limiters its configuration
// names, in order.
func (s *Snapshot) attachLimits(routes []conf.Route, lims map[string]*routeLimit) {
	names := make(map[string][]string)
	for _, rc := range routes {
		if len(rc.Limits) > 0 {
			names[rc.Name] = rc.Limits
		}
	}
	if len(names) == 0 {
		return
	}
	for _, hl := range s.http {
		for _, rt := range hl.routes {
			if rt.limits != nil {
				continue // shared with another listener, done
			}
			for _, n := range names[rt.name] {
				rt.limits = append(rt.limits, lims[n])
			}
		}
	}
}

// limited counts the request against its route's limits and answers 429
// when one refuses it. It reports whether the request was answered.
func (x *exchange) limited() bool {
	for _, rl := range x.rt.limits {
		d, slot := rl.l.Acquire(x.limitKey(rl))
		if d.Allowed {
			if x.nslots < maxHeldSlots {
				x.slots[x.nslots] = slot
				x.nslots++
			} else {
				slot.Release() // past maxHeldSlots capped limits a route's cap is not held
			}
			continue
		}
		retry := ceilSeconds(int64(d.RetryAfter))
		b := strconv.AppendInt(x.buf[:0], retry, 10)
		n := len(b)
		if rl.policy == "" { // a concurrency cap alone
			x.buf = b
			x.writeText(429, errorBodies[429], false, httpmsg.Field{Name: "Retry-After", Value: bytesString(b)})
			return true
		}
		b = append(b, rl.quoted...)
		b = append(b, ";r=0;t="...)
		b = strconv.AppendInt(b, ceilSeconds(int64(d.Reset)), 10)
		x.buf = b
		x.writeText(429, errorBodies[429], false,
			httpmsg.Field{Name: "Retry-After", Value: bytesString(b[:n])},
			httpmsg.Field{Name: "RateLimit-Policy", Value: rl.policy},
			httpmsg.Field{Name: "RateLimit", Value: bytesString(b[n:])})
		return true
	}
	return false
}

// releaseSlots gives back the concurrency slots the request holds.
func (x *exchange) releaseSlots() {
	for i := range x.nslots {
		x.slots[i].Release()
	}
	x.nslots = 0
}

func ceilSeconds(ns int64) int64 { return (ns + 1e9 - 1) / 1e9 }

// limitKey is the bucket key of the request for rl: a view of the
// request or the exchange, which the limiter copies only to keep it.
func (x *exchange) limitKey(rl *routeLimit) string {
	switch rl.key {
	case "route":
		return x.rt.name
	case "header":
		return x.in.Header.Get(rl.keyName)
	case "cookie":
		return cookieValue(x.in.Header, rl.keyName)
	}
	if c := x.accessClient(); c != x.peer {
		return bytesString(c.AppendTo(x.logBuf[:0]))
	}
	return x.clientIP
}

// cookieValue returns the value of cookie name in h's Cookie fields, ""
// when absent. It allocates nothing.
func cookieValue(h httpmsg.Header, name string) string {
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Cookie") {
			continue
		}
		for c := range strings.SplitSeq(f.Value, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(c), "=")
			if k == name {
				return v
			}
		}
	}
	return ""
}

// limitDescs are the rate-limit metrics, read from the limiters at
// scrape time.
var (
	limitRequests = prometheus.NewDesc("edgeway_ratelimit_requests_total",
		"Requests counted against a rate limit, by limit and result (allowed, limited).", []string{"limit", "result"}, nil)
	limitKeys = prometheus.NewDesc("edgeway_ratelimit_keys",
		"Keys a rate limit keeps a bucket for now.", []string{"limit"}, nil)
	limitEvictions = prometheus.NewDesc("edgeway_ratelimit_evictions_total",
		"Buckets a rate limit dropped to stay within max_keys.", []string{"limit"}, nil)
)

// collectLimits writes the live limits' counts.
func collectLimits(ch chan<- prometheus.Metric, lims map[string]*routeLimit) {
	for name, rl := range lims {
		st := rl.l.Stats()
		ch <- prometheus.MustNewConstMetric(limitRequests, prometheus.CounterValue, float64(st.Allowed), name, "allowed")
		ch <- prometheus.MustNewConstMetric(limitRequests, prometheus.CounterValue, float64(st.Limited), name, "limited")
		ch <- prometheus.MustNewConstMetric(limitKeys, prometheus.GaugeValue, float64(st.Keys), name)
		ch <- prometheus.MustNewConstMetric(limitEvictions, prometheus.CounterValue, float64(st.Evicted), name)
	}
}
