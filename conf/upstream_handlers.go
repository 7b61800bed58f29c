package conf

import (
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Handlers of the upstream block.

// DefaultUpstream returns an Upstream with every documented default filled
// in and no servers.
func DefaultUpstream(name string) Upstream {
	return Upstream{
		Name:            name,
		ConnectTimeout:  5 * time.Second,
		ResponseTimeout: 60 * time.Second,
		IdleTimeout:     90 * time.Second,
		MaxIdleConns:    256,
		Balance:         Balance{Policy: RoundRobin},
		PanicThreshold:  50,
		Retry:           DefaultRetry(),
		Protocol:        "http1",
	}
}

func upstreamDirective(b *builder, _ *routes.File, d *routes.Directive) {
	u := DefaultUpstream(b.name(d, "upstream"))
	u.Pos = b.pos(d.Pos)
	run(b, upstreamTable, &u, d.Block.Directives)
	checkUpstreamTLS(b, &u, d)
	if len(u.Servers) == 0 && !hasDirective(d, "server") {
		b.missingf(d, "upstream %q has no servers (expected at least one `server ADDR` line)", u.Name)
	}
	b.cfg.Upstreams = append(b.cfg.Upstreams, u)
}

var upstreamTable = table[*Upstream]{
	"server":           server,
	"connect_timeout":  func(b *builder, u *Upstream, d *routes.Directive) { b.setDuration(d, &u.ConnectTimeout) },
	"response_timeout": func(b *builder, u *Upstream, d *routes.Directive) { b.setDuration(d, &u.ResponseTimeout) },
	"idle_timeout":     func(b *builder, u *Upstream, d *routes.Directive) { b.setDuration(d, &u.IdleTimeout) },
	"max_idle_conns":   func(b *builder, u *Upstream, d *routes.Directive) { b.setInt(d, 0, &u.MaxIdleConns) },
	"balance":          balanceDirective,
	"health":           healthDirective,
	"outlier":          outlierDirective,
	"breaker":          breakerDirective,
	"panic_threshold":  func(b *builder, u *Upstream, d *routes.Directive) { b.setPercent(d, 0, 100, "off", &u.PanicThreshold) },
	"slow_start":       slowStart,
	"retries":          retryDirective,
	"max_requests":     func(b *builder, u *Upstream, d *routes.Directive) { b.setInt(d, 0, &u.MaxRequests) },
	"max_connections":  func(b *builder, u *Upstream, d *routes.Directive) { b.setInt(d, 0, &u.MaxConnections) },
	"max_pending":      func(b *builder, u *Upstream, d *routes.Directive) { b.setInt(d, 0, &u.MaxPending) },
	"send_proxy": func(b *builder, u *Upstream, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "PROXY protocol version", []string{"v1", "v2"}); ok {
			u.SendProxy = v
		}
	},
	"tls": upstreamTLSDirective,
	"fallback": func(b *builder, u *Upstream, d *routes.Directive) {
		if _, ok := b.oneOf(d.Args[0], "protocol fallback", []string{"http1"}); ok {
			u.H2Fallback = true
		}
	},
	"protocol": func(b *builder, u *Upstream, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "upstream protocol", []string{"http1", "h2", "h2c"}); ok {
			u.Protocol = v
		}
	},
}

// MaxWeight bounds a server's weight, in the files and through the admin
// API alike, so sums of weights cannot overflow.
const MaxWeight = 1 << 20

func server(b *builder, u *Upstream, d *routes.Directive) {
	a := d.Args[0]
	s := Server{Addr: a.Value, Weight: 1, Pos: b.pos(d.Pos)}
	ok := true
	if err := checkAddr(a.Value, false); err != nil {
		b.errorf(a.Pos, "server: %v", err)
		ok = false
	}
	for _, other := range u.Servers {
		if other.Addr == s.Addr {
			b.errorf(a.Pos, "server %s is listed twice in upstream %q", s.Addr, u.Name)
			ok = false
		}
	}
	if len(d.Args) == 3 {
		ok = b.weight(d.Args[2], &s.Weight) && ok
	}
	if ok {
		u.Servers = append(u.Servers, s)
	}
}

func (b *builder) weight(a routes.Arg, dst *int) bool {
	w, err := routes.ParseInt(a.Value)
	switch {
	case err != nil:
		b.errorf(a.Pos, "weight: %v", err)
	case w < 0 || w > MaxWeight:
		b.errorf(a.Pos, "weight: %d is out of range (expected 0 to %d)", w, MaxWeight)
	default:
		*dst = w
		return true
	}
	return false
}

// checkUpstreamTLS holds protocol and tls to each other: h2 is HTTP/2
// over TLS and needs a tls block, h2c is cleartext and cannot have one.
func checkUpstreamTLS(b *builder, u *Upstream, d *routes.Directive) {
	p := findDirective(d, "protocol")
	switch {
	case u.Protocol == "h2" && u.TLS == nil:
		b.errorf(p.Pos, "protocol \"h2\" is HTTP/2 over TLS and needs a tls block (cleartext HTTP/2 is h2c)")
	case u.Protocol == "h2c" && u.TLS != nil:
		b.errorf(p.Pos, "protocol \"h2c\" is cleartext HTTP/2 and cannot be used with tls (HTTP/2 over TLS is h2)")
	}
	if f := findDirective(d, "fallback"); f != nil && u.H2Fallback && u.Protocol != "h2" {
		b.errorf(f.Pos, "fallback http1 is for protocol h2 (a server that does not pick h2 by ALPN); this upstream's protocol is %s", u.Protocol)
	}
}
