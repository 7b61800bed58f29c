package conf

import (
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/routes"
)

// Handlers of an upstream's balance line and of its health, outlier and
// breaker blocks.

var policies = []string{RoundRobin, LeastRequest, Random, Hash, Sticky}

var hashKeys = []string{HashHeader, HashCookie, HashClientIP, HashPath}

func balanceDirective(b *builder, u *Upstream, d *routes.Directive) {
	p, ok := b.oneOf(d.Args[0], "balance policy", policies)
	if !ok {
		return
	}
	bal := Balance{Policy: p}
	switch {
	case p == Sticky && len(d.Args) == 2:
		bal.Name, ok = b.token(d.Args[1], "sticky cookie name")
	case p == Sticky:
		b.errorf(d.End(), "expected a cookie name after \"balance sticky\"")
		ok = false
	case p == Hash:
		ok = b.hashKey(d, &bal)
	case len(d.Args) > 1:
		b.errorf(d.Args[1].Pos, "balance %s takes no argument, got %q", p, d.Args[1].Value)
		ok = false
	}
	if ok {
		u.Balance = bal
	}
}

// hashKey reads `hash header NAME`, `hash cookie NAME`, `hash client_ip`
// or `hash path`.
func (b *builder) hashKey(d *routes.Directive, bal *Balance) bool {
	if len(d.Args) < 2 {
		b.errorf(d.End(), "expected header NAME, cookie NAME, client_ip or path after \"balance hash\"")
		return false
	}
	key, ok := b.oneOf(d.Args[1], "hash key", hashKeys)
	if !ok {
		return false
	}
	bal.HashKey = key
	needsName := key == HashHeader || key == HashCookie
	switch {
	case needsName && len(d.Args) < 3:
		b.errorf(d.End(), "expected a %s name after \"hash %s\"", key, key)
		return false
	case needsName:
		bal.Name, ok = b.token(d.Args[2], key+" name")
		return ok
	case len(d.Args) > 2:
		b.errorf(d.Args[2].Pos, "hash %s takes no name, got %q", key, d.Args[2].Value)
		return false
	}
	return true
}

// token reads a header or cookie name.
func (b *builder) token(a routes.Arg, what string) (string, bool) {
	for i := 0; i < len(a.Value); i++ {
		if !httpsyntax.IsTokenChar(a.Value[i]) {
			b.errorf(a.Pos, "invalid %s %q", what, a.Value)
			return "", false
		}
	}
	return a.Value, a.Value != ""
}

// setPercent reads `N%` or `N` from lo to hi; the word zeroWord, when
// not empty, reads as 0.
func (b *builder) setPercent(d *routes.Directive, lo, hi int, zeroWord string, dst *int) {
	a := d.Args[0]
	if zeroWord != "" && a.Value == zeroWord {
		*dst = 0
		return
	}
	v, err := strconv.Atoi(strings.TrimSuffix(a.Value, "%"))
	switch {
	case err != nil:
		b.errorf(a.Pos, "%s: invalid percentage %q (expected a whole number such as 50%%)", d.Name, a.Value)
	case v < lo || v > hi:
		b.errorf(a.Pos, "%s: %s is out of range (expected %d%% to %d%%)", d.Name, a.Value, lo, hi)
	default:
		*dst = v
	}
}

// setIntOff reads a whole number of at least 1, or `off` as 0.
func (b *builder) setIntOff(d *routes.Directive, dst *int) {
	b.setIntRange(d, 1, 1<<30, "off", dst)
}

func healthDirective(b *builder, u *Upstream, d *routes.Directive) {
	h := DefaultHealthCheck()
	expect := h.Expect
	h.Expect = nil
	run(b, healthTable, &h, d.Block.Directives)
	if h.Expect == nil {
		h.Expect = expect
	}
	if h.Timeout > h.Interval {
		b.errorf(d.Pos, "health: timeout %v is longer than interval %v", h.Timeout, h.Interval)
	}
	u.Health = &h
}

var healthTable = table[*HealthCheck]{
	"type": func(b *builder, h *HealthCheck, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "health check type", []string{"http", "tcp"}); ok {
			h.Type = v
		}
	},
	"path":   healthPath,
	"method": func(b *builder, h *HealthCheck, d *routes.Directive) { h.Method, _ = b.token(d.Args[0], "method") },
	"host": func(b *builder, h *HealthCheck, d *routes.Directive) {
		if !validHost(d.Args[0].Value) {
			b.errorf(d.Args[0].Pos, "host: invalid host %q", d.Args[0].Value)
			return
		}
		h.Host = d.Args[0].Value
	},
	"expect":    healthExpect,
	"body":      func(b *builder, h *HealthCheck, d *routes.Directive) { h.Body = d.Args[0].Value },
	"interval":  func(b *builder, h *HealthCheck, d *routes.Directive) { b.setDuration(d, &h.Interval) },
	"jitter":    func(b *builder, h *HealthCheck, d *routes.Directive) { b.setPercent(d, 0, 50, "", &h.Jitter) },
	"timeout":   func(b *builder, h *HealthCheck, d *routes.Directive) { b.setDuration(d, &h.Timeout) },
	"healthy":   func(b *builder, h *HealthCheck, d *routes.Directive) { b.setInt(d, 1, &h.Healthy) },
	"unhealthy": func(b *builder, h *HealthCheck, d *routes.Directive) { b.setInt(d, 1, &h.Unhealthy) },
	"initial": func(b *builder, h *HealthCheck, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "initial state", []string{"healthy", "unhealthy"}); ok {
			h.InitialHealthy = v == "healthy"
		}
	},
}

func healthPath(b *builder, h *HealthCheck, d *routes.Directive) {
	a := d.Args[0]
	for i := 0; i < len(a.Value); i++ {
		if c := a.Value[i]; c <= ' ' || c >= 0x7f {
			b.errorf(a.Pos, "path: invalid path %q", a.Value)
			return
		}
	}
	if !strings.HasPrefix(a.Value, "/") {
		b.errorf(a.Pos, "path: %q must start with /", a.Value)
		return
	}
	h.Path = a.Value
}

// healthExpect reads status codes and ranges: `expect 200-299 304`.
func healthExpect(b *builder, h *HealthCheck, d *routes.Directive) {
	for _, a := range d.Args {
		lo, hi, ok := strings.Cut(a.Value, "-")
		if !ok {
			hi = lo
		}
		l, err1 := strconv.Atoi(lo)
		r, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || l < 100 || r > 599 || l > r {
			b.errorf(a.Pos, "expect: invalid status range %q (expected a code or LO-HI from 100 to 599)", a.Value)
			continue
		}
		h.Expect = append(h.Expect, StatusRange{Lo: l, Hi: r})
	}
}

func outlierDirective(b *builder, u *Upstream, d *routes.Directive) {
	o := DefaultOutlier()
	run(b, outlierTable, &o, d.Block.Directives)
	if o.MaxEjection < o.BaseEjection {
		b.errorf(d.Pos, "outlier: max_ejection %v is shorter than base_ejection %v", o.MaxEjection, o.BaseEjection)
	}
	u.Outlier = &o
}

var outlierTable = table[*Outlier]{
	"consecutive_5xx":              func(b *builder, o *Outlier, d *routes.Directive) { b.setIntOff(d, &o.Consecutive5xx) },
	"consecutive_connect_failures": func(b *builder, o *Outlier, d *routes.Directive) { b.setIntOff(d, &o.ConsecutiveConnectFailures) },
	"base_ejection":                func(b *builder, o *Outlier, d *routes.Directive) { b.setDuration(d, &o.BaseEjection) },
	"max_ejection":                 func(b *builder, o *Outlier, d *routes.Directive) { b.setDuration(d, &o.MaxEjection) },
	"max_ejection_percent": func(b *builder, o *Outlier, d *routes.Directive) {
		b.setPercent(d, 0, 100, "", &o.MaxEjectionPercent)
	},
}

func breakerDirective(b *builder, u *Upstream, d *routes.Directive) {
	br := DefaultBreaker()
	run(b, breakerTable, &br, d.Block.Directives)
	u.Breaker = &br
}

var breakerTable = table[*Breaker]{
	"error_rate":   func(b *builder, br *Breaker, d *routes.Directive) { b.setPercent(d, 1, 100, "", &br.ErrorRate) },
	"min_requests": func(b *builder, br *Breaker, d *routes.Directive) { b.setInt(d, 1, &br.MinRequests) },
	"window":       func(b *builder, br *Breaker, d *routes.Directive) { b.setDuration(d, &br.Window) },
	"cool_down":    func(b *builder, br *Breaker, d *routes.Directive) { b.setDuration(d, &br.CoolDown) },
	"trials":       func(b *builder, br *Breaker, d *routes.Directive) { b.setInt(d, 1, &br.Trials) },
}

// slowStart reads `slow_start DURATION`; 0s or off turns it off.
func slowStart(b *builder, u *Upstream, d *routes.Directive) {
	if d.Args[0].Value == "off" {
		u.SlowStart = 0
		return
	}
	if v, ok := b.duration(d, false); ok {
		u.SlowStart = v
	}
}
