package conf

import (
	"strconv"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Handlers of a listener's TLS, PROXY protocol, redirect_https and h2
// settings, and the checks that tie them to its protocols.

// The protocols a listener can speak, and the default set.
var (
	protocols        = []string{"http1", "h2c", "tls", "h2", "h3"}
	defaultProtocols = []string{"http1", "h2c"}
)

// DefaultH2Limits returns the HTTP/2 limits of a listener without an h2
// block.
func DefaultH2Limits() H2Limits {
	return H2Limits{MaxConcurrentStreams: 250, MaxFrameSize: minFrameSize, StreamStallTimeout: 30 * time.Second}
}

// The bounds of the h2 block's values. A frame size is bounded by RFC 9113
// §6.5.2 (SETTINGS_MAX_FRAME_SIZE).
const (
	maxStreams      = 10000
	minFrameSize    = 1 << 14
	maxFrameSize    = 1<<24 - 1
	minStallTimeout = time.Second
)

// finishListener runs once a listen block is read: checks between its
// directives, whatever order they were written in, and the TLS defaults.
func (b *builder) finishListener(l *Listener, d *routes.Directive) {
	tlsOn := containsString(l.Protocols, "tls")
	if p := findDirective(d, "protocols"); p != nil {
		b.checkProtocols(l, p, tlsOn)
	}
	block := findDirective(d, "tls")
	switch {
	case tlsOn && l.TLS == nil:
		t := DefaultListenerTLS()
		t.Pos = l.Pos
		l.TLS = &t
	case !tlsOn && block != nil:
		b.errorf(block.Pos, "listener %q has a tls block but its protocols do not include tls (add tls to protocols)", l.Name)
		l.TLS = nil
	}
	if r := findDirective(d, "redirect_https"); r != nil && tlsOn {
		b.errorf(r.Pos, "redirect_https: listener %q speaks TLS already (redirect_https belongs on a cleartext listener)", l.Name)
	}
	if tlsOn {
		b.tlsListeners = append(b.tlsListeners, namedPos{name: l.Name, pos: d.Pos})
	}
	if h := findDirective(d, "h2"); h != nil && !containsString(l.Protocols, "h2") && !containsString(l.Protocols, "h2c") {
		b.warnf(h.Pos, "h2: listener %q speaks neither h2 nor h2c, so its HTTP/2 limits have no effect", l.Name)
	}
}

// checkProtocols holds the protocols to each other: h2 is HTTP/2 over TLS,
// h2c cleartext HTTP/2. On a TLS listener http1 and h2 are the protocols
// offered by ALPN; when neither is written, both are.
func (b *builder) checkProtocols(l *Listener, d *routes.Directive, tlsOn bool) {
	for _, a := range d.Args {
		switch {
		case a.Value == "h2" && !tlsOn:
			b.errorf(a.Pos, "protocol \"h2\" is HTTP/2 over TLS and needs tls in the list (cleartext HTTP/2 is h2c)")
		case a.Value == "h2c" && tlsOn:
			b.errorf(a.Pos, "protocol \"h2c\" is cleartext HTTP/2 and cannot be used with tls (HTTP/2 over TLS is h2)")
		}
	}
	if tlsOn && !containsString(l.Protocols, "http1") && !containsString(l.Protocols, "h2") {
		l.Protocols = append(l.Protocols, "h2", "http1")
	}
}

// proxyProtocol reads `proxy_protocol trusted CIDR...`.
func proxyProtocol(b *builder, l *Listener, d *routes.Directive) {
	if a := d.Args[0]; a.Value != "trusted" {
		b.errorf(a.Pos, "proxy_protocol: expected \"trusted\" before the addresses, got %s", a)
		return
	}
	pp := &ProxyProtocol{Pos: b.pos(d.Pos)}
	for _, a := range d.Args[1:] {
		p, err := parsePrefix(a.Value)
		if err != nil {
			b.errorf(a.Pos, "proxy_protocol: invalid address %q (expected an IP address or a CIDR such as 10.0.0.0/8)", a.Value)
			continue
		}
		pp.Trusted = append(pp.Trusted, p)
	}
	l.ProxyProtocol = pp
}

// redirectHTTPSListener reads `redirect_https [PORT]`.
func redirectHTTPSListener(b *builder, l *Listener, d *routes.Directive) {
	if len(d.Args) == 0 {
		l.RedirectHTTPS = 443
		return
	}
	if p, ok := b.port(d.Name, d.Args[0]); ok {
		l.RedirectHTTPS = p
	}
}

// port reads a TCP port, 1 to 65535.
func (b *builder) port(directive string, a routes.Arg) (int, bool) {
	p, err := strconv.Atoi(a.Value)
	if err != nil || p < 1 || p > 65535 || a.Value[0] == '+' {
		b.errorf(a.Pos, "%s: invalid port %s (expected a port from 1 to 65535)", directive, a)
		return 0, false
	}
	return p, true
}

func h2Directive(b *builder, l *Listener, d *routes.Directive) {
	run(b, h2Table, &l.H2, d.Block.Directives)
}

var h2Table = table[*H2Limits]{
	"max_concurrent_streams": func(b *builder, h *H2Limits, d *routes.Directive) {
		b.setIntRange(d, 1, maxStreams, "", &h.MaxConcurrentStreams)
	},
	"max_frame_size": func(b *builder, h *H2Limits, d *routes.Directive) {
		v := int64(h.MaxFrameSize)
		b.setSizeRange(d, minFrameSize, maxFrameSize, &v)
		h.MaxFrameSize = int(v)
	},
	"stream_stall_timeout": func(b *builder, h *H2Limits, d *routes.Directive) {
		v, ok := b.duration(d, false)
		switch {
		case !ok:
		case v < minStallTimeout:
			b.errorf(d.Args[0].Pos, "%s: %s is out of range (expected at least %v)", d.Name, d.Args[0].Value, minStallTimeout)
		default:
			h.StreamStallTimeout = v
		}
	},
}
