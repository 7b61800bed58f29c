package conf

import (
	"strings"
	"testing"
	"time"
)

// baseQUIC is a TLS listener the quic tests add a line to.
const baseQUIC = "listen web {\n  addr :443\n  %s\n}\ntls { self_signed localhost }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n"

func TestQUICDirectives(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		line  string
		check func(Listener) bool
		err   string // "line:col: message prefix"
		warn  string
	}{
		{desc: "h3 on a TLS listener", line: "protocols tls h2 h3", check: func(l Listener) bool {
			return strings.Join(l.Protocols, ",") == "tls,h2,h3" && l.QUIC == DefaultQUIC()
		}},
		{desc: "h3 alone adds h2 and http1", line: "protocols tls h3", check: func(l Listener) bool {
			return strings.Join(l.Protocols, ",") == "tls,h3,h2,http1"
		}},
		{desc: "defaults", line: "protocols tls h3", check: func(l Listener) bool {
			q := l.QUIC
			return q.IdleTimeout == 30*time.Second && q.MaxIncomingStreams == 100 && !q.Allow0RTT &&
				q.AltSvcMaxAge == 24*time.Hour && !q.AltSvcOff && q.MaxConnsPerSource == 256
		}},
		{desc: "every setting", line: "protocols tls h2 h3\n  quic {\n idle_timeout 1m; max_incoming_streams 50; stream_window 1MiB; connection_window 4MiB\n allow_0rtt on; udp_rcvbuf 8MiB; udp_sndbuf 2MiB; alt_svc_max_age 1h; max_conns_per_source 10 }", check: func(l Listener) bool {
			return l.QUIC == QUIC{IdleTimeout: time.Minute, MaxIncomingStreams: 50, StreamWindow: 1 << 20, ConnectionWindow: 4 << 20,
				Allow0RTT: true, UDPRecvBuffer: 8 << 20, UDPSendBuffer: 2 << 20, AltSvcMaxAge: time.Hour, MaxConnsPerSource: 10, Pos: l.QUIC.Pos}
		}},
		{desc: "alt-svc off and no per-source limit", line: "protocols tls h3\n  quic { alt_svc_max_age off; max_conns_per_source off }", check: func(l Listener) bool {
			return l.QUIC.AltSvcOff && l.QUIC.MaxConnsPerSource == 0
		}},
		{desc: "h3 without tls", line: "protocols http1 h3", err: `3:19: protocol "h3" is HTTP/3 over QUIC and needs tls`},
		{desc: "quic block without h3", line: "protocols tls h2\n  quic { idle_timeout 1m }", warn: `4:3: quic: listener "web" does not list h3`},
		{desc: "idle_timeout too short", line: "protocols tls h3\n  quic { idle_timeout 10ms }", err: `4:23: idle_timeout: 10ms is out of range (expected 1s to 10m0s)`},
		{desc: "streams zero", line: "protocols tls h3\n  quic { max_incoming_streams 0 }", err: `4:31: max_incoming_streams: 0 is out of range (expected 1 to 10000)`},
		{desc: "window too small", line: "protocols tls h3\n  quic { stream_window 1KiB }", err: `4:24: stream_window: 1KiB is out of range (expected 64KiB to 1GiB)`},
		{desc: "0-RTT bad switch", line: "protocols tls h3\n  quic { allow_0rtt maybe }", err: `4:21: allow_0rtt:`},
		{desc: "alt_svc_max_age fraction", line: "protocols tls h3\n  quic { alt_svc_max_age 1500ms }", err: `4:26: alt_svc_max_age: 1500ms is not a whole number of seconds`},
		{desc: "udp buffer too large", line: "protocols tls h3\n  quic { udp_rcvbuf 1GiB }", err: `4:21: udp_rcvbuf: 1GiB is out of range`},
		{desc: "unknown directive", line: "protocols tls h3\n  quic { zero_rtt on }", err: `4:10: unknown directive "zero_rtt" in quic block`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, strings.Replace(baseQUIC, "%s", tc.line, 1))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), "main.conf:"+tc.err) {
					t.Fatalf("error = %v, want main.conf:%s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.check != nil && !tc.check(cfg.Listeners[0]) {
				t.Errorf("unexpected listener: %+v", cfg.Listeners[0])
			}
			if tc.warn != "" {
				var ws []string
				for _, w := range cfg.Warnings {
					ws = append(ws, w.String())
				}
				if !strings.Contains(strings.Join(ws, "\n"), "main.conf:"+tc.warn) {
					t.Errorf("warnings = %q, want main.conf:%s", ws, tc.warn)
				}
			}
		})
	}
}
