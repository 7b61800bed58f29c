package conf

import (
	"fmt"
	"math"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Handlers of the main file's directives and of the listen, admin and log
// blocks.

// topTable is filled in init: include loads files whose directives run
// through topTable again, a cycle Go refuses in a variable initialiser.
var topTable table[*routes.File]

func init() {
	topTable = table[*routes.File]{
		"listen": listenDirective,
		"admin":  adminDirective,
		"log": func(b *builder, _ *routes.File, d *routes.Directive) {
			run(b, logTable, &b.cfg.Log, d.Block.Directives)
		},
		"tracing":        tracingDirective,
		"cluster":        clusterDirective,
		"runtime":        runtimeDirective,
		"buffers":        buffersDirective,
		"tls":            tlsDirective,
		"shutdown_grace": shutdownGrace,
		"shutdown_delay": shutdownDelay,
		"tunnel_drain":   tunnelDrain,
		"include":        func(b *builder, f *routes.File, d *routes.Directive) { b.include(f, d) },
		"upstream":       upstreamDirective,
		"route":          routeDirective,
		"tcp route":      tcpRouteDirective,
		"limit":          limitDirective,
		"jwt":            namedJWTDirective,
	}
}

func runTop(b *builder, f *routes.File) { run(b, topTable, f, f.Directives) }

func listenDirective(b *builder, _ *routes.File, d *routes.Directive) {
	l := DefaultListener(b.name(d, "listener"), "")
	l.Pos = b.pos(d.Pos)
	run(b, listenTable, &l, d.Block.Directives)
	if !hasDirective(d, "addr") {
		b.missingf(d, "listener %q has no addr", l.Name)
	}
	if a := findDirective(d, "accept_loops"); a != nil && l.AcceptLoops > 1 && !l.ReusePort {
		b.errorf(a.Args[0].Pos, "accept_loops: %d sockets need `reuseport on`", l.AcceptLoops)
	}
	b.finishListener(&l, d)
	b.finishQUIC(&l, d)
	b.cfg.Listeners = append(b.cfg.Listeners, l)
}

func listenAddrDirective(b *builder, l *Listener, d *routes.Directive) {
	if b.listenAddr(d, fmt.Sprintf("listener %q", l.Name)) {
		l.Addr = d.Args[0].Value
	}
}

// writeTimeout reads `write_timeout DURATION|off`; off is 0.
func writeTimeout(b *builder, l *Listener, d *routes.Directive) {
	if d.Args[0].Value == "off" {
		l.WriteTimeout = 0
		return
	}
	b.setDuration(d, &l.WriteTimeout)
}

// durationSetting and switchSetting are the handlers of a plain duration
// and of an on|off setting held in the field field returns.
func durationSetting(field func(*Listener) *time.Duration) handler[*Listener] {
	return func(b *builder, l *Listener, d *routes.Directive) { b.setDuration(d, field(l)) }
}

func switchSetting(field func(*Listener) *bool) handler[*Listener] {
	return func(b *builder, l *Listener, d *routes.Directive) { b.setSwitch(d, field(l)) }
}

// maxDeferAccept is the longest defer_accept accepted.
const maxDeferAccept = time.Minute

// maxKeepAlive is the kernel's limit on TCP_KEEPIDLE and TCP_KEEPINTVL
// (MAX_TCP_KEEPIDLE, MAX_TCP_KEEPINTVL).
const maxKeepAlive = 32767 * time.Second

// maxSocketBuffer is the largest rcvbuf or sndbuf accepted.
const maxSocketBuffer = 64 << 20

func socketBuffer(b *builder, d *routes.Directive, dst *int) {
	var v int64 = int64(*dst)
	b.setSizeRange(d, 0, maxSocketBuffer, &v)
	*dst = int(v)
}

// listenAddr checks an address something listens on and remembers it for
// the conflict check.
func (b *builder) listenAddr(d *routes.Directive, owner string) bool {
	a := d.Args[0]
	if err := checkAddr(a.Value, true); err != nil {
		b.errorf(a.Pos, "%s: %v", d.Name, err)
		return false
	}
	b.addrs = append(b.addrs, boundAddr{owner: owner, addr: a.Value, pos: a.Pos})
	return true
}

func listenProtocols(b *builder, l *Listener, d *routes.Directive) {
	l.Protocols = l.Protocols[:0]
	seen := map[string]bool{}
	for _, a := range d.Args {
		p, ok := b.oneOf(a, "protocol", protocols)
		switch {
		case !ok:
		case seen[p]:
			b.errorf(a.Pos, "protocol %q is listed twice", p)
		default:
			seen[p] = true
			l.Protocols = append(l.Protocols, p)
		}
	}
}

// maxHeaderBytesLimit is the largest max_header_bytes accepted.
const maxHeaderBytesLimit = 1 << 20

func maxHeaderBytes(b *builder, l *Listener, d *routes.Directive) {
	a := d.Args[0]
	n, err := routes.ParseSize(a.Value)
	switch {
	case err != nil:
		b.errorf(a.Pos, "%s: %v", d.Name, err)
	case n < 1 || n > maxHeaderBytesLimit:
		b.errorf(a.Pos, "%s: %s is out of range (expected 1 byte to 1MiB)", d.Name, a.Value)
	default:
		l.MaxHeaderBytes = int(n)
	}
}

// DefaultMaxBodyBytes is a listener's request body limit when none is
// written; UnlimitedBody is MaxBodyBytes for `max_body_bytes unlimited`.
const (
	DefaultMaxBodyBytes int64 = 100 << 20
	UnlimitedBody       int64 = -1
)

// maxBodyBytes reads `max_body_bytes SIZE|unlimited`; a size must be at
// least one byte.
func maxBodyBytes(b *builder, l *Listener, d *routes.Directive) {
	a := d.Args[0]
	if a.Value == "unlimited" {
		l.MaxBodyBytes = UnlimitedBody
		return
	}
	n, err := routes.ParseSize(a.Value)
	switch {
	case err != nil:
		b.errorf(a.Pos, "%s: invalid size %q (expected a byte count such as 512KiB or 100MiB, or unlimited)", d.Name, a.Value)
	case n < 1:
		b.errorf(a.Pos, "%s: must be at least 1 byte, got %s (write unlimited for no limit)", d.Name, a.Value)
	default:
		l.MaxBodyBytes = n
	}
}

// DefaultBodyTimeout is a listener's body_timeout when none is written;
// NoBodyTimeout is BodyTimeout for `body_timeout off`.
const (
	DefaultBodyTimeout time.Duration = 10 * time.Second
	NoBodyTimeout      time.Duration = -1
)

// bodyTimeout reads `body_timeout DURATION|off`; a duration is more than 0.
func bodyTimeout(b *builder, l *Listener, d *routes.Directive) {
	if d.Args[0].Value == "off" {
		l.BodyTimeout = NoBodyTimeout
		return
	}
	b.setDuration(d, &l.BodyTimeout)
}

func trustedProxies(b *builder, l *Listener, d *routes.Directive) {
	for _, a := range d.Args {
		p, err := parsePrefix(a.Value)
		if err != nil {
			b.errorf(a.Pos, "%v", err)
			continue
		}
		l.TrustedProxies = append(l.TrustedProxies, p)
	}
}

func adminDirective(b *builder, _ *routes.File, d *routes.Directive) {
	a := &Admin{Listen: "127.0.0.1:9900", Pos: b.pos(d.Pos)}
	run(b, adminTable, a, d.Block.Directives)
	if !hasDirective(d, "listen") { // the default address can still collide
		b.addrs = append(b.addrs, boundAddr{owner: "the admin API", addr: a.Listen, pos: d.Pos})
	}
	if !hasDirective(d, "token_file") {
		b.missingf(d, "admin block has no token_file (every /api/ call needs a bearer token; "+
			"make one with: head -c 32 /dev/urandom | base64 > admin.token && chmod 600 admin.token)")
	}
	b.cfg.Admin = a
}

var adminTable = table[*Admin]{
	"listen": func(b *builder, a *Admin, d *routes.Directive) {
		if b.listenAddr(d, "the admin API") {
			a.Listen = d.Args[0].Value
		}
	},
	"token_file": func(b *builder, a *Admin, d *routes.Directive) {
		a.TokenFile = b.filePath(d, 0, SecretFile)
		if len(d.Args) == 2 {
			if _, ok := b.oneOf(d.Args[1], "token_file option", []string{"create"}); ok {
				a.CreateToken = true
			}
		}
	},
	"state_dir": func(b *builder, a *Admin, d *routes.Directive) { a.StateDir = b.filePath(d, 0, WritableDir) },
}

var logTable = table[*Log]{
	"access": func(b *builder, l *Log, d *routes.Directive) { b.setSwitch(d, &l.Access) },
	"format": func(b *builder, l *Log, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "log format", []string{"json", "text"}); ok {
			l.Format = v
		}
	},
	"output":        func(b *builder, l *Log, d *routes.Directive) { l.Output = b.logPath(d) },
	"access_output": func(b *builder, l *Log, d *routes.Directive) { l.AccessOutput = b.logPath(d) },
	"access_query": func(b *builder, l *Log, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "access_query", []string{"keep", "redact", "drop"}); ok {
			l.AccessQuery = v
		}
	},
	"level": func(b *builder, l *Log, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "log level", []string{"debug", "info", "warn", "error"}); ok {
			l.Level = v
		}
	},
	"sample": func(b *builder, l *Log, d *routes.Directive) { b.setShare(d, &l.Sample) },
	"slower_than": func(b *builder, l *Log, d *routes.Directive) {
		if v, ok := b.duration(d, false); ok {
			l.SlowerThan = v
		}
	},
}

func runtimeDirective(b *builder, _ *routes.File, d *routes.Directive) {
	r := &b.cfg.Runtime
	run(b, runtimeTable, r, d.Block.Directives)
	if g := findDirective(d, "gc_percent"); g != nil && r.GCPercent < 0 && r.MemoryLimit == 0 {
		b.errorf(g.Args[0].Pos, "gc_percent: off needs gomemlimit, or the heap grows without bound")
	}
}

var runtimeTable = table[*Runtime]{
	"gomaxprocs": func(b *builder, r *Runtime, d *routes.Directive) { b.setIntRange(d, 1, 1024, "auto", &r.GOMAXPROCS) },
	"gomemlimit": func(b *builder, r *Runtime, d *routes.Directive) {
		b.setSizeRange(d, 1<<20, math.MaxInt64, &r.MemoryLimit)
	},
	"gc_percent": gcPercent,
}

// gcPercent reads `gc_percent N|off`; N is at least 1 (0 would collect
// all the time).
func gcPercent(b *builder, r *Runtime, d *routes.Directive) {
	if d.Args[0].Value == "off" {
		r.GCPercent = -1
		return
	}
	b.setIntRange(d, 1, math.MaxInt32, "off", &r.GCPercent)
}

func tunnelDrain(b *builder, _ *routes.File, d *routes.Directive) {
	if d.Args[0].Value == "off" {
		b.cfg.TunnelDrain = 0
		return
	}
	if v, ok := b.duration(d, false); ok {
		b.cfg.TunnelDrain = v
	}
}

func shutdownGrace(b *builder, _ *routes.File, d *routes.Directive) {
	if v, ok := b.duration(d, false); ok {
		b.cfg.ShutdownGrace = v
	}
}

func shutdownDelay(b *builder, _ *routes.File, d *routes.Directive) {
	if v, ok := b.duration(d, false); ok {
		b.cfg.ShutdownDelay = v
	}
}

func hasDirective(d *routes.Directive, name string) bool {
	return findDirective(d, name) != nil
}

// findDirective returns the last directive called name in d's block.
func findDirective(d *routes.Directive, name string) *routes.Directive {
	var found *routes.Directive
	for _, c := range d.Block.Directives {
		if c.Name == name {
			found = c
		}
	}
	return found
}
