package conf

import (
	"strings"
	"time"

	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/routes"
)

// limitDirective reads a `limit NAME { ... }` block.
func limitDirective(b *builder, _ *routes.File, d *routes.Directive) {
	l := Limit{Name: b.name(d, "limit"), Key: "client_ip", MaxKeys: 100000, Pos: b.pos(d.Pos)}
	run(b, limitTable, &l, d.Block.Directives)
	if l.Rate == 0 && l.MaxInFlight == 0 && !hasDirective(d, "rate") && !hasDirective(d, "max_in_flight") {
		b.missingf(d, "limit %q has no rate and no max_in_flight (expected `rate 100/s`, `rate 600/m`, `rate 10000/h` or `max_in_flight N`)", l.Name)
	}
	if l.Burst == 0 {
		l.Burst = l.Rate
	}
	b.cfg.Limits = append(b.cfg.Limits, l)
}

var limitTable = table[*Limit]{
	"rate": func(b *builder, l *Limit, d *routes.Directive) {
		a := d.Args[0]
		n, per, ok := strings.Cut(a.Value, "/")
		v, err := routes.ParseInt(n)
		unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[per]
		if !ok || err != nil || v < 1 || unit == 0 {
			b.errorf(a.Pos, "rate: invalid rate %q (expected requests per second, minute or hour: 100/s, 600/m, 10000/h)", a.Value)
			return
		}
		l.Rate, l.Per = v, unit
	},
	"burst":         func(b *builder, l *Limit, d *routes.Directive) { b.setIntRange(d, 1, 1<<30, "", &l.Burst) },
	"max_keys":      func(b *builder, l *Limit, d *routes.Directive) { b.setIntRange(d, 1, 1<<26, "", &l.MaxKeys) },
	"max_in_flight": func(b *builder, l *Limit, d *routes.Directive) { b.setIntRange(d, 1, 1<<20, "", &l.MaxInFlight) },
	"key": func(b *builder, l *Limit, d *routes.Directive) {
		kind, ok := b.oneOf(d.Args[0], "limit key", []string{"client_ip", "route", "header", "cookie"})
		if !ok {
			return
		}
		named := kind == "header" || kind == "cookie"
		switch {
		case named && len(d.Args) != 2:
			b.errorf(d.Args[0].Pos, "key %s: expected a name, such as `key %s X-Api-Key`", kind, kind)
			return
		case !named && len(d.Args) != 1:
			b.errorf(d.Args[1].Pos, "key %s takes no name", kind)
			return
		case named && !httpsyntax.ValidToken(d.Args[1].Value):
			b.errorf(d.Args[1].Pos, "key %s: invalid name %q", kind, d.Args[1].Value)
			return
		}
		l.Key = kind
		if named {
			l.KeyName = d.Args[1].Value
		}
	},
}
