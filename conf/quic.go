package conf

import (
	"time"

	"github.com/edgeway/edgeway/routes"
)

// Handlers of a listener's `quic { ... }` block and the h3 protocol: a
// TLS listener whose protocols include h3 also serves HTTP/3 over QUIC on
// the same port number over UDP, and advertises it on its TCP responses
// with Alt-Svc.

// QUIC is a listener's HTTP/3 settings (`quic { ... }`); DefaultQUIC has
// the defaults. They apply only when the listener's protocols include h3.
type QUIC struct {
	// IdleTimeout closes a QUIC connection silent for this long
	// (`idle_timeout`). Default 30s; 1s to 10m.
	IdleTimeout time.Duration
	// MaxIncomingStreams caps the requests one connection may have in
	// flight (`max_incoming_streams`). Default 100; 1 to 10000.
	MaxIncomingStreams int
	// StreamWindow and ConnectionWindow are the largest flow-control
	// windows for one request body and for all of a connection's
	// (`stream_window`, `connection_window`). 0: quic-go's defaults (6MiB
	// and 15MiB); otherwise 64KiB to 1GiB.
	StreamWindow, ConnectionWindow int64
	// Allow0RTT accepts 0-RTT data from resuming clients (`allow_0rtt
	// on`): requests in it are served only for GET, HEAD and OPTIONS (and
	// reach the upstream with Early-Data: 1); others get 425 Too Early.
	// 0-RTT can be replayed, so the default is off.
	Allow0RTT bool
	// UDPRecvBuffer and UDPSendBuffer set SO_RCVBUF and SO_SNDBUF on the
	// UDP socket (`udp_rcvbuf`, `udp_sndbuf`). 0: what quic-go asks for
	// (7MiB). The start logs a warning naming the sysctl
	// (net.core.rmem_max, wmem_max) when the kernel grants less. At most
	// 64MiB.
	UDPRecvBuffer, UDPSendBuffer int
	// AltSvcMaxAge is the ma= of the Alt-Svc header the TCP listener
	// adds to its responses (`alt_svc_max_age`). Default 24h; `off`
	// (AltSvcOff) sends no Alt-Svc: clients then find HTTP/3 only by DNS
	// HTTPS records or not at all.
	AltSvcMaxAge time.Duration
	AltSvcOff    bool
	// MaxConnsPerSource caps the QUIC connections (handshakes included)
	// of one client IP address (`max_conns_per_source`); more are
	// refused. Default 256; 0 (written `off`) is no limit.
	MaxConnsPerSource int
	Pos               Pos
}

// DefaultQUIC returns the HTTP/3 settings of a listener without a quic
// block.
func DefaultQUIC() QUIC {
	return QUIC{IdleTimeout: 30 * time.Second, MaxIncomingStreams: 100, AltSvcMaxAge: 24 * time.Hour, MaxConnsPerSource: 256}
}

// The bounds of the quic block's values.
const (
	minQUICIdle   = time.Second
	maxQUICIdle   = 10 * time.Minute
	minQUICWindow = 64 << 10
	maxQUICWindow = 1 << 30
)

func quicDirective(b *builder, l *Listener, d *routes.Directive) {
	l.QUIC.Pos = b.pos(d.Pos)
	run(b, quicTable, &l.QUIC, d.Block.Directives)
}

var quicTable = table[*QUIC]{
	"idle_timeout": func(b *builder, q *QUIC, d *routes.Directive) {
		if v, ok := b.duration(d, true); ok {
			if v < minQUICIdle || v > maxQUICIdle {
				b.errorf(d.Args[0].Pos, "%s: %s is out of range (expected %v to %v)", d.Name, d.Args[0].Value, minQUICIdle, maxQUICIdle)
				return
			}
			q.IdleTimeout = v
		}
	},
	"max_incoming_streams": func(b *builder, q *QUIC, d *routes.Directive) {
		b.setIntRange(d, 1, maxStreams, "", &q.MaxIncomingStreams)
	},
	"stream_window": func(b *builder, q *QUIC, d *routes.Directive) {
		b.setSizeRange(d, minQUICWindow, maxQUICWindow, &q.StreamWindow)
	},
	"connection_window": func(b *builder, q *QUIC, d *routes.Directive) {
		b.setSizeRange(d, minQUICWindow, maxQUICWindow, &q.ConnectionWindow)
	},
	"allow_0rtt": func(b *builder, q *QUIC, d *routes.Directive) { b.setSwitch(d, &q.Allow0RTT) },
	"udp_rcvbuf": func(b *builder, q *QUIC, d *routes.Directive) { socketBuffer(b, d, &q.UDPRecvBuffer) },
	"udp_sndbuf": func(b *builder, q *QUIC, d *routes.Directive) { socketBuffer(b, d, &q.UDPSendBuffer) },
	"alt_svc_max_age": func(b *builder, q *QUIC, d *routes.Directive) {
		if d.Args[0].Value == "off" {
			q.AltSvcOff = true
			return
		}
		if v, ok := b.duration(d, true); ok {
			if v%time.Second != 0 {
				b.errorf(d.Args[0].Pos, "%s: %s is not a whole number of seconds", d.Name, d.Args[0].Value)
				return
			}
			q.AltSvcMaxAge, q.AltSvcOff = v, false
		}
	},
	"max_conns_per_source": func(b *builder, q *QUIC, d *routes.Directive) {
		b.setIntRange(d, 1, 1<<20, "off", &q.MaxConnsPerSource)
	},
}

// finishQUIC holds h3 to the listener's other protocols: HTTP/3 runs over
// QUIC, which is always TLS 1.3, so h3 needs tls; a quic block without h3
// has no effect.
func (b *builder) finishQUIC(l *Listener, d *routes.Directive) {
	if !containsString(l.Protocols, "h3") {
		if q := findDirective(d, "quic"); q != nil {
			b.warnf(q.Pos, "quic: listener %q does not list h3 in its protocols, so its QUIC settings have no effect", l.Name)
		}
		return
	}
	if containsString(l.Protocols, "tls") {
		return
	}
	p := findDirective(d, "protocols")
	for _, a := range p.Args {
		if a.Value == "h3" {
			b.errorf(a.Pos, "protocol \"h3\" is HTTP/3 over QUIC and needs tls in the list (QUIC is always encrypted)")
		}
	}
}
