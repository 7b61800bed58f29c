package conf

import (
	"crypto/tls"
	"net/netip"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// Skeletons the TLS, PROXY protocol, h2 and redirect_https tests add one
// line to.
const (
	// the line sits in a top-level tls block, at 5:3
	baseTLS = "listen web { addr :80 }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\ntls {\n  %s\n}\n"
	// the line sits in a listen block that has no protocols line yet, at 3:3
	baseSecure = "listen web {\n  addr :443\n  %s\n}\ntls { self_signed localhost }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n"
	// the line sits in a TLS listener, at 4:3
	baseTLSListen = "listen web {\n  addr :443\n  protocols tls\n  %s\n}\ntls { self_signed localhost }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n"
	// a TLS listener "sec", a cleartext one "web" and an upstream u; the
	// line sits at 6:1
	baseTCP = "listen web { addr :80 }\nlisten sec { addr :443; protocols tls }\ntls { self_signed localhost }\nupstream u { server a:1 }\nroute r { match Path(`/`); to u }\n%s\n"
)

// confCase is one configuration: a skeleton, the line put in it, and what
// Load must make of it.
type confCase struct {
	desc  string
	base  string
	line  string
	check func(*Config) bool // for valid configurations
	err   string             // "line:col: message prefix" of the first error
	warn  string             // "line:col: message prefix" of a warning that must be there
}

func runConfCases(t *testing.T, tests []confCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, strings.Replace(tt.base, "%s", tt.line, 1))
			if tt.err != "" {
				if err == nil {
					t.Fatalf("no error, want %q", tt.err)
				}
				if got := diagnostics(t, err); !strings.HasPrefix(got[0], "main.conf:"+tt.err) {
					t.Errorf("first error = %q, want prefix %q (all: %q)", got[0], "main.conf:"+tt.err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			if tt.check != nil && !tt.check(cfg) {
				t.Errorf("check failed on %q: %+v", tt.line, cfg)
			}
			if tt.warn != "" && !hasWarning(cfg, "main.conf:"+tt.warn) {
				t.Errorf("no warning %q in %v", tt.warn, cfg.Warnings)
			}
			if tt.warn == "" && len(cfg.Warnings) > 0 {
				t.Errorf("unexpected warnings: %v", cfg.Warnings)
			}
		})
	}
}

func hasWarning(cfg *Config, prefix string) bool {
	for _, w := range cfg.Warnings {
		if strings.HasPrefix(w.Pos.String()+": "+w.Msg, prefix) {
			return true
		}
	}
	return false
}

func TestTLSStoreDirectives(t *testing.T) {
	t.Parallel()
	store := func(want TLSStore) func(*Config) bool {
		return func(c *Config) bool {
			got := *c.TLS
			got.Pos = Pos{}
			for i := range got.Certificates {
				got.Certificates[i].Pos = Pos{}
			}
			return reflect.DeepEqual(got, want)
		}
	}
	withDefaults := func(s TLSStore) TLSStore {
		d := DefaultTLSStore()
		d.Certificates, d.SelfSigned = s.Certificates, s.SelfSigned
		return d
	}
	runConfCases(t, []confCase{
		{desc: "no tls block", base: baseTop, line: "", check: func(c *Config) bool { return c.TLS == nil }},
		{desc: "empty tls block has the defaults", base: baseTop, line: "tls { }", check: func(c *Config) bool {
			return reflect.DeepEqual(*c.TLS, TLSStore{OCSPStapling: true, SessionTickets: true, TicketRotation: 12 * time.Hour, Pos: Pos{File: "main.conf", Line: 4, Col: 1}})
		}},
		{desc: "cert", base: baseTLS, line: "cert site.pem site.key", check: store(withDefaults(TLSStore{
			Certificates: []Certificate{{CertFile: "site.pem", KeyFile: "site.key"}}}))},
		{desc: "cert absolute", base: baseTLS, line: "cert /etc/edgeway/../edgeway/a.pem /etc/edgeway/a.key", check: store(withDefaults(TLSStore{
			Certificates: []Certificate{{CertFile: "/etc/edgeway/a.pem", KeyFile: "/etc/edgeway/a.key"}}}))},
		{desc: "certs with a default", base: baseTLS, line: "cert rsa.pem rsa.key\n  cert ec.pem ec.key default", check: store(withDefaults(TLSStore{
			Certificates: []Certificate{{CertFile: "rsa.pem", KeyFile: "rsa.key"}, {CertFile: "ec.pem", KeyFile: "ec.key", Default: true}}}))},
		{desc: "cert then a directive on one line", base: baseTLS, line: "cert a.pem a.key default ocsp_stapling off", check: func(c *Config) bool {
			return c.TLS.Certificates[0].Default && !c.TLS.OCSPStapling
		}},
		{desc: "two defaults", base: baseTLS, line: "cert a.pem a.key default\n  cert b.pem b.key default", err: `6:20: cert: only one certificate can be the default (line 5 already is)`},
		{desc: "cert twice", base: baseTLS, line: "cert a.pem a.key\n  cert a.pem b.key", err: `6:8: cert: a.pem is listed twice (first at line 5)`},
		{desc: "cert without key", base: baseTLS, line: "cert a.pem", err: `5:13: expected CERTFILE KEYFILE [default] after "cert"`},
		{desc: "cert with a stray word", base: baseTLS, line: "cert a.pem a.key primary", err: `5:20: expected a new line or ";" after cert CERTFILE KEYFILE [default], got "primary"`},
		{desc: "cert empty path", base: baseTLS, line: `cert "" a.key`, err: `5:8: cert: expected a file path, got an empty string`},
		{desc: "self_signed", base: baseTLS, line: "self_signed localhost *.Example.com 127.0.0.1 ::1\n  self_signed www.example.org", check: store(withDefaults(TLSStore{
			SelfSigned: []string{"localhost", "*.example.com", "127.0.0.1", "::1", "www.example.org"}}))},
		{desc: "self_signed bad name", base: baseTLS, line: "self_signed ok.example bad/name", err: `5:26: self_signed: invalid name "bad/name" (expected a host name such as example.com, a wildcard such as *.example.com, or an IP address)`},
		{desc: "self_signed wildcard IP", base: baseTLS, line: "self_signed *.10.0.0.1", err: `5:15: self_signed: invalid name "*.10.0.0.1"`},
		{desc: "self_signed bare star", base: baseTLS, line: "self_signed *", err: `5:15: self_signed: invalid name "*"`},
		{desc: "self_signed inner wildcard", base: baseTLS, line: "self_signed a.*.example.com", err: `5:15: self_signed: invalid name "a.*.example.com"`},
		{desc: "self_signed twice", base: baseTLS, line: "self_signed a.example A.example", err: `5:25: self_signed: "A.example" is listed twice`},
		{desc: "ocsp_stapling off", base: baseTLS, line: "ocsp_stapling off", check: func(c *Config) bool { return !c.TLS.OCSPStapling && c.TLS.SessionTickets }},
		{desc: "ocsp_stapling bad", base: baseTLS, line: "ocsp_stapling maybe", err: `5:17: ocsp_stapling: `},
		{desc: "session_tickets off", base: baseTLS, line: "session_tickets off", check: func(c *Config) bool { return !c.TLS.SessionTickets && c.TLS.OCSPStapling }},
		{desc: "ticket_rotation", base: baseTLS, line: "ticket_rotation 1h", check: func(c *Config) bool { return c.TLS.TicketRotation == time.Hour }},
		{desc: "ticket_rotation at the minimum", base: baseTLS, line: "ticket_rotation 1m", check: func(c *Config) bool { return c.TLS.TicketRotation == time.Minute }},
		{desc: "ticket_rotation too short", base: baseTLS, line: "ticket_rotation 30s", err: `5:19: ticket_rotation: 30s is out of range (expected at least 1m0s)`},
		{desc: "ticket_rotation bad", base: baseTLS, line: "ticket_rotation daily", err: `5:19: ticket_rotation: invalid duration "daily"`},
		{desc: "second tls block", base: baseTLS, line: "self_signed a\n}\ntls {\n  self_signed b", err: `7:1: duplicate "tls" in main file (first at line 4)`},
		{desc: "unknown directive", base: baseTLS, line: "bogus { }", err: `5:3: unknown directive "bogus" in tls block (expected cert, self_signed, ocsp_stapling, session_tickets, ticket_rotation, acme)`},
	})
}

func TestTLSBlockInRouteFile(t *testing.T) {
	t.Parallel()
	_, err := loadString(t, "listen web { addr :80 }\ninclude \"r.routes\"\n", "r.routes", "tls { self_signed a }\n")
	if err == nil {
		t.Fatal("tls block in a route file accepted")
	}
	if got := diagnostics(t, err); !strings.HasPrefix(got[0], `r.routes:1:1: "tls" is only allowed in the main file`) {
		t.Errorf("errors = %q", got)
	}
}

// TestTLSPathsResolved loads from disk: relative certificate and CA paths
// are taken from the main file's directory and become absolute; the files
// need not exist (the tls store reads them).
func TestTLSPathsResolved(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"conf/edgeway.conf": "tls {\n  cert certs/a.pem ../keys/a.key\n  cert /srv/b.pem /srv/b.key default\n}\n" +
		"listen web { addr 127.0.0.1:0; protocols tls; tls { client_ca ca/clients.pem } }\n"})
	cfg, err := Load(filepath.Join(dir, "conf", "edgeway.conf"))
	if err != nil {
		t.Fatal(err)
	}
	certs := cfg.TLS.Certificates
	want := [][2]string{
		{filepath.Join(dir, "conf", "certs", "a.pem"), filepath.Join(dir, "keys", "a.key")},
		{"/srv/b.pem", "/srv/b.key"},
	}
	for i, c := range certs {
		if [2]string{c.CertFile, c.KeyFile} != want[i] || !filepath.IsAbs(c.CertFile) {
			t.Errorf("cert %d = %s %s, want %s", i, c.CertFile, c.KeyFile, want[i])
		}
	}
	if ca := cfg.Listeners[0].TLS.ClientCA; ca != filepath.Join(dir, "conf", "ca", "clients.pem") {
		t.Errorf("client_ca = %s", ca)
	}
}

func TestListenerProtocols(t *testing.T) {
	t.Parallel()
	protos := func(want ...string) func(*Config) bool {
		return func(c *Config) bool { return slices.Equal(c.Listeners[0].Protocols, want) }
	}
	noCerts := "listen web {\n  addr :443\n  protocols tls\n}\n%s\n"
	runConfCases(t, []confCase{
		{desc: "cleartext defaults", base: baseListen, line: "", check: func(c *Config) bool {
			l := c.Listeners[0]
			return slices.Equal(l.Protocols, []string{"http1", "h2c"}) && l.TLS == nil && l.ProxyProtocol == nil &&
				l.RedirectHTTPS == 0 && l.H2 == DefaultH2Limits()
		}},
		{desc: "tls alone offers h2 and http1", base: baseSecure, line: "protocols tls", check: func(c *Config) bool {
			l := c.Listeners[0]
			return protos("tls", "h2", "http1")(c) && reflect.DeepEqual(*l.TLS, ListenerTLS{MinVersion: tls.VersionTLS12,
				HandshakeTimeout: 10 * time.Second, Pos: Pos{File: "main.conf", Line: 1, Col: 1}})
		}},
		{desc: "tls with http1 only", base: baseSecure, line: "protocols tls http1", check: protos("tls", "http1")},
		{desc: "tls with h2 only", base: baseSecure, line: "protocols h2 tls", check: protos("h2", "tls")},
		{desc: "tls and h2 before a directive", base: baseSecure, line: "protocols http1 tls h2 idle_timeout 5s", check: func(c *Config) bool {
			return protos("http1", "tls", "h2")(c) && c.Listeners[0].IdleTimeout == 5*time.Second
		}},
		{desc: "tls listener with a certificate", base: noCerts, line: "tls { cert a.pem a.key }", check: protos("tls", "h2", "http1")},
		{desc: "h2c with tls", base: baseSecure, line: "protocols tls h2c", err: `3:17: protocol "h2c" is cleartext HTTP/2 and cannot be used with tls (HTTP/2 over TLS is h2)`},
		{desc: "h2 without tls", base: baseListen, line: "protocols http1 h2", err: `3:19: protocol "h2" is HTTP/2 over TLS and needs tls in the list (cleartext HTTP/2 is h2c)`},
		{desc: "tls twice", base: baseSecure, line: "protocols tls tls", err: `3:17: protocol "tls" is listed twice`},
		{desc: "unknown protocol", base: baseListen, line: "protocols http1 h4", err: `3:19: unknown protocol "h4" (expected http1, h2c, tls, h2, h3)`},
		{desc: "tls listener without a tls block", base: noCerts, line: "", err: `1:1: listener "web" is a TLS listener but no tls block provides certificates (expected a top-level tls block with ` + "`cert CERTFILE KEYFILE`, `self_signed NAME` or an `acme` block, or those lines in the listener's tls block)"},
		{desc: "tls listener with an empty tls block", base: noCerts, line: "tls { ocsp_stapling off }", err: `1:1: listener "web" is a TLS listener but no tls block provides certificates`},
	})
}

func TestListenerTLSBlock(t *testing.T) {
	t.Parallel()
	lt := func(c *Config) ListenerTLS { return *c.Listeners[0].TLS }
	runConfCases(t, []confCase{
		{desc: "empty block has the defaults", base: baseTLSListen, line: "tls { }", check: func(c *Config) bool {
			return reflect.DeepEqual(lt(c), ListenerTLS{MinVersion: tls.VersionTLS12, HandshakeTimeout: 10 * time.Second,
				Pos: Pos{File: "main.conf", Line: 4, Col: 3}})
		}},
		{desc: "min_version 1.3", base: baseTLSListen, line: "tls { min_version 1.3 }", check: func(c *Config) bool { return lt(c).MinVersion == tls.VersionTLS13 }},
		{desc: "min_version 1.2", base: baseTLSListen, line: "tls { min_version 1.2 }", check: func(c *Config) bool { return lt(c).MinVersion == tls.VersionTLS12 }},
		{desc: "min_version 1.1", base: baseTLSListen, line: "tls { min_version 1.1 }", err: `4:21: unknown TLS version "1.1" (expected 1.2, 1.3)`},
		{desc: "ciphers", base: baseTLSListen, line: "tls { ciphers TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 }", check: func(c *Config) bool {
			return slices.Equal(lt(c).CipherSuites, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256})
		}},
		{desc: "insecure cipher", base: baseTLSListen, line: "tls { ciphers TLS_RSA_WITH_AES_128_GCM_SHA256 }", err: `4:17: ciphers: TLS_RSA_WITH_AES_128_GCM_SHA256 is insecure and not allowed`},
		{desc: "RC4", base: baseTLSListen, line: "tls { ciphers TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 TLS_RSA_WITH_RC4_128_SHA }", err: `4:55: ciphers: TLS_RSA_WITH_RC4_128_SHA is insecure`},
		{desc: "TLS 1.3 suite", base: baseTLSListen, line: "tls { ciphers TLS_AES_128_GCM_SHA256 }", err: `4:17: ciphers: TLS_AES_128_GCM_SHA256 is a TLS 1.3 suite; TLS 1.3 suites are always on and not configurable`},
		{desc: "unknown cipher", base: baseTLSListen, line: "tls { ciphers AES128 }", err: `4:17: ciphers: unknown cipher suite "AES128" (expected TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, `},
		{desc: "cipher twice", base: baseTLSListen, line: "tls { ciphers TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 }", err: `4:55: ciphers: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 is listed twice`},
		{desc: "ciphers with TLS 1.3 only", base: baseTLSListen, line: "tls { min_version 1.3; ciphers TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 }",
			warn: `4:26: ciphers: no effect with min_version 1.3`},
		{desc: "curves", base: baseTLSListen, line: "tls { curves X25519MLKEM768 X25519 P-256 P-384 secp521r1 }", check: func(c *Config) bool {
			return slices.Equal(lt(c).Curves, []uint16{uint16(tls.X25519MLKEM768), uint16(tls.X25519), uint16(tls.CurveP256), uint16(tls.CurveP384), uint16(tls.CurveP521)})
		}},
		{desc: "curve alias", base: baseTLSListen, line: "tls { curves secp256r1 }", check: func(c *Config) bool { return slices.Equal(lt(c).Curves, []uint16{uint16(tls.CurveP256)}) }},
		{desc: "unknown curve", base: baseTLSListen, line: "tls { curves X25519 P-192 }", err: `4:23: curves: unknown curve "P-192" (expected X25519MLKEM768, X25519, P-256, P-384, P-521)`},
		{desc: "curve twice by alias", base: baseTLSListen, line: "tls { curves P-256 secp256r1 }", err: `4:22: curves: secp256r1 is listed twice`},
		{desc: "client_ca requires by default", base: baseTLSListen, line: "tls { client_ca ca.pem }", check: func(c *Config) bool {
			return lt(c).ClientCA == "ca.pem" && lt(c).ClientAuth == "require"
		}},
		{desc: "client_auth optional", base: baseTLSListen, line: "tls { client_auth optional; client_ca /etc/ca.pem }", check: func(c *Config) bool {
			return lt(c).ClientCA == "/etc/ca.pem" && lt(c).ClientAuth == "optional"
		}},
		{desc: "client_auth without client_ca", base: baseTLSListen, line: "tls { client_auth require }", err: `4:9: client_auth: needs client_ca, the CAs that sign client certificates`},
		{desc: "client_auth bad", base: baseTLSListen, line: "tls { client_ca ca.pem; client_auth maybe }", err: `4:39: unknown client_auth mode "maybe" (expected require, optional)`},
		{desc: "client_ca empty", base: baseTLSListen, line: `tls { client_ca "" }`, err: `4:19: client_ca: expected a file path, got an empty string`},
		{desc: "own certificates", base: baseTLSListen, line: "tls { self_signed own.test\n cert c.pem k.pem }", check: func(c *Config) bool {
			o := lt(c).Certificates
			return o != nil && slices.Equal(o.SelfSigned, []string{"own.test"}) && len(o.Certificates) == 1 &&
				o.Certificates[0].KeyFile == "k.pem" && c.TLS != nil && slices.Equal(c.TLS.SelfSigned, []string{"localhost"})
		}},
		{desc: "no own certificates", base: baseTLSListen, line: "tls { min_version 1.3 }", check: func(c *Config) bool { return lt(c).Certificates == nil }},
		{desc: "own certificates without a tls block", base: "listen web {\n  addr :443\n  protocols tls\n  %s\n}\nroute r { match Path(`/`); respond 200 \"ok\" }\n",
			line: "tls { self_signed own.test }", check: func(c *Config) bool { return c.TLS == nil && lt(c).Certificates != nil }},
		{desc: "handshake_timeout", base: baseTLSListen, line: "tls { handshake_timeout 3s }", check: func(c *Config) bool { return lt(c).HandshakeTimeout == 3*time.Second }},
		{desc: "handshake_timeout zero", base: baseTLSListen, line: "tls { handshake_timeout 0s }", err: `4:27: handshake_timeout: must be more than 0`},
		{desc: "tls block on a cleartext listener", base: baseListen, line: "tls { min_version 1.3 }", err: `3:3: listener "web" has a tls block but its protocols do not include tls (add tls to protocols)`},
		{desc: "tls block before protocols", base: baseSecure, line: "tls { min_version 1.3 }\n  protocols tls", check: func(c *Config) bool { return lt(c).MinVersion == tls.VersionTLS13 }},
		{desc: "unknown directive", base: baseTLSListen, line: "tls { ocsp_stapling on }", err: `4:9: unknown directive "ocsp_stapling" in listen tls block (expected min_version, ciphers, curves, client_ca, client_auth, handshake_timeout, cert, self_signed)`},
		{desc: "two tls blocks", base: baseTLSListen, line: "tls { }\n  tls { }", err: `5:3: duplicate "tls" in listen block (first at line 4)`},
	})
}

func TestProxyProtocolAndRedirect(t *testing.T) {
	t.Parallel()
	pp := func(want ...string) func(*Config) bool {
		return func(c *Config) bool {
			p := c.Listeners[0].ProxyProtocol
			if p == nil || p.Pos != (Pos{File: "main.conf", Line: 3, Col: 3}) {
				return false
			}
			var got []string
			for _, t := range p.Trusted {
				got = append(got, t.String())
			}
			return slices.Equal(got, want)
		}
	}
	redirect := func(port int) func(*Config) bool {
		return func(c *Config) bool { return c.Listeners[0].RedirectHTTPS == port }
	}
	runConfCases(t, []confCase{
		{desc: "proxy_protocol", base: baseListen, line: "proxy_protocol trusted 10.0.0.0/8 192.168.1.7 ::1 10.1.2.3/16", check: pp("10.0.0.0/8", "192.168.1.7/32", "::1/128", "10.1.0.0/16")},
		{desc: "proxy_protocol then a directive", base: baseListen, line: "proxy_protocol trusted 10.0.0.0/8 idle_timeout 5s", check: func(c *Config) bool {
			return pp("10.0.0.0/8")(c) && c.Listeners[0].IdleTimeout == 5*time.Second
		}},
		{desc: "proxy_protocol on a TLS listener", base: baseTLSListen, line: "proxy_protocol trusted 127.0.0.1", check: func(c *Config) bool {
			return c.Listeners[0].ProxyProtocol.Trusted[0] == netip.MustParsePrefix("127.0.0.1/32")
		}},
		{desc: "proxy_protocol without trusted", base: baseListen, line: "proxy_protocol 10.0.0.0/8 1.2.3.4", err: `3:18: proxy_protocol: expected "trusted" before the addresses, got "10.0.0.0/8"`},
		{desc: "proxy_protocol no address", base: baseListen, line: "proxy_protocol trusted", err: `3:25: expected trusted CIDR... after "proxy_protocol"`},
		{desc: "proxy_protocol bad address", base: baseListen, line: "proxy_protocol trusted 10.0.0.0/33", err: `3:26: proxy_protocol: invalid address "10.0.0.0/33" (expected an IP address or a CIDR such as 10.0.0.0/8)`},
		{desc: "proxy_protocol twice", base: baseListen, line: "proxy_protocol trusted 10.0.0.1\n  proxy_protocol trusted 10.0.0.2", err: `4:3: duplicate "proxy_protocol" in listen block (first at line 3)`},
		{desc: "redirect_https", base: baseListen, line: "redirect_https", check: redirect(443)},
		{desc: "redirect_https port", base: baseListen, line: "redirect_https 8443", check: redirect(8443)},
		{desc: "redirect_https then a directive", base: baseListen, line: "redirect_https idle_timeout 5s", check: func(c *Config) bool {
			return redirect(443)(c) && c.Listeners[0].IdleTimeout == 5*time.Second
		}},
		{desc: "redirect_https port 0", base: baseListen, line: "redirect_https 0", err: `3:18: redirect_https: invalid port "0" (expected a port from 1 to 65535)`},
		{desc: "redirect_https port word", base: baseListen, line: "redirect_https https", err: `3:18: redirect_https: invalid port "https" (expected a port from 1 to 65535)`},
		{desc: "redirect_https port too big", base: baseListen, line: "redirect_https 65536", err: `3:18: redirect_https: invalid port "65536"`},
		{desc: "redirect_https two ports", base: baseListen, line: "redirect_https 443 8443", err: `3:22: expected a new line or ";" after redirect_https [PORT], got "8443"`},
		{desc: "redirect_https on a TLS listener", base: baseTLSListen, line: "redirect_https", err: `4:3: redirect_https: listener "web" speaks TLS already (redirect_https belongs on a cleartext listener)`},
	})
}

func TestH2Limits(t *testing.T) {
	t.Parallel()
	h2 := func(want H2Limits) func(*Config) bool {
		return func(c *Config) bool { return c.Listeners[0].H2 == want }
	}
	d := DefaultH2Limits()
	runConfCases(t, []confCase{
		{desc: "defaults", base: baseListen, line: "", check: h2(H2Limits{MaxConcurrentStreams: 250, MaxFrameSize: 16384, StreamStallTimeout: 30 * time.Second})},
		{desc: "empty block", base: baseListen, line: "h2 { }", check: h2(d)},
		{desc: "all", base: baseListen, line: "h2 { max_concurrent_streams 100; max_frame_size 1MiB; stream_stall_timeout 1m }",
			check: h2(H2Limits{MaxConcurrentStreams: 100, MaxFrameSize: 1 << 20, StreamStallTimeout: time.Minute})},
		{desc: "bounds", base: baseListen, line: "h2 { max_concurrent_streams 10000; max_frame_size 16777215; stream_stall_timeout 1s }",
			check: h2(H2Limits{MaxConcurrentStreams: 10000, MaxFrameSize: 16777215, StreamStallTimeout: time.Second})},
		{desc: "on a TLS listener", base: baseTLSListen, line: "h2 { max_concurrent_streams 1 }", check: func(c *Config) bool { return c.Listeners[0].H2.MaxConcurrentStreams == 1 }},
		{desc: "streams 0", base: baseListen, line: "h2 { max_concurrent_streams 0 }", err: `3:31: max_concurrent_streams: 0 is out of range (expected 1 to 10000)`},
		{desc: "streams too many", base: baseListen, line: "h2 { max_concurrent_streams 10001 }", err: `3:31: max_concurrent_streams: 10001 is out of range (expected 1 to 10000)`},
		{desc: "frame too small", base: baseListen, line: "h2 { max_frame_size 16383 }", err: `3:23: max_frame_size: 16383 is out of range (expected 16KiB to 16777215)`},
		{desc: "frame too large", base: baseListen, line: "h2 { max_frame_size 16MiB }", err: `3:23: max_frame_size: 16MiB is out of range (expected 16KiB to 16777215)`},
		{desc: "stall too short", base: baseListen, line: "h2 { stream_stall_timeout 500ms }", err: `3:29: stream_stall_timeout: 500ms is out of range (expected at least 1s)`},
		{desc: "stall bad", base: baseListen, line: "h2 { stream_stall_timeout never }", err: `3:29: stream_stall_timeout: invalid duration "never"`},
		{desc: "no HTTP/2 on the listener", base: baseListen, line: "protocols http1\n  h2 { max_concurrent_streams 10 }",
			warn: `4:3: h2: listener "web" speaks neither h2 nor h2c, so its HTTP/2 limits have no effect`},
		{desc: "unknown directive", base: baseListen, line: "h2 { max_streams 10 }", err: `3:8: unknown directive "max_streams" in h2 block`},
	})
	if l := DefaultListener("x", ":1"); l.H2 != d {
		t.Errorf("DefaultListener H2 = %+v, want %+v", l.H2, d)
	}
}

func TestUpstreamProtocolAndSendProxy(t *testing.T) {
	t.Parallel()
	up := func(send, proto string) func(*Config) bool {
		return func(c *Config) bool { return c.Upstreams[0].SendProxy == send && c.Upstreams[0].Protocol == proto }
	}
	runConfCases(t, []confCase{
		{desc: "defaults", base: baseUpstream, line: "", check: up("", "http1")},
		{desc: "send_proxy v1", base: baseUpstream, line: "send_proxy v1", check: up("v1", "http1")},
		{desc: "send_proxy v2", base: baseUpstream, line: "send_proxy v2", check: up("v2", "http1")},
		{desc: "send_proxy bad", base: baseUpstream, line: "send_proxy v3", err: `4:14: unknown PROXY protocol version "v3" (expected v1, v2)`},
		{desc: "protocol h2c", base: baseUpstream, line: "protocol h2c", check: up("", "h2c")},
		{desc: "protocol http1", base: baseUpstream, line: "protocol http1 send_proxy v2", check: up("v2", "http1")},
		{desc: "protocol h2 without tls", base: baseUpstream, line: "protocol h2", err: `4:3: protocol "h2" is HTTP/2 over TLS and needs a tls block`},
		{desc: "protocol bad", base: baseUpstream, line: "protocol h3", err: `4:12: unknown upstream protocol "h3" (expected http1, h2, h2c)`},
		{desc: "fallback without h2", base: baseUpstream, line: "protocol h2c fallback http1", err: `4:16: fallback http1 is for protocol h2`},
		{desc: "fallback word", base: baseUpstream, line: "fallback h2c", err: `4:12: unknown protocol fallback "h2c" (expected http1)`},
	})
	if u := DefaultUpstream("x"); u.Protocol != "http1" || u.SendProxy != "" {
		t.Errorf("DefaultUpstream = %+v", u)
	}
}

func TestTCPRouteChecks(t *testing.T) {
	t.Parallel()
	runConfCases(t, []confCase{
		{desc: "reaches every listener", base: baseTCP, line: "tcp route db { match HostSNI(`db`); to u }"},
		{desc: "names the TLS listener", base: baseTCP, line: "tcp route db { match HostSNI(`db`); to u; listeners web sec }"},
		{desc: "names only a cleartext listener", base: baseTCP, line: "tcp route db { match HostSNI(`db`); to u; listeners web }",
			warn: `6:1: tcp route "db" reaches no TLS listener`},
		{desc: "no TLS listener at all", base: baseTop, line: "tcp route db { match HostSNI(`db`); to u }",
			warn: `4:1: tcp route "db" reaches no TLS listener, so it never matches`},
		{desc: "h2c upstream", base: baseTCP, line: "upstream g { server b:1; protocol h2c }\ntcp route db { match HostSNI(`db`); to g }",
			err: `7:40: tcp route "db" forwards raw bytes, but upstream "g" has ` + "`protocol h2c`"},
		{desc: "h2c upstream defined later", base: baseTCP, line: "tcp route db { match HostSNI(`db`); to g }\nupstream g { server b:1; protocol h2c }",
			err: `6:40: tcp route "db" forwards raw bytes, but upstream "g" has ` + "`protocol h2c`"},
		{desc: "send_proxy upstream", base: baseTCP, line: "upstream g { server b:1; send_proxy v2 }\ntcp route db { match HostSNI(`db`); to g }"},
	})
}

func TestRouteRedirectHTTPS(t *testing.T) {
	t.Parallel()
	runConfCases(t, []confCase{
		{desc: "default", base: baseRoute, line: "to u; redirect_https", check: mw(RedirectHTTPS, "", "", 308)},
		{desc: "code", base: baseRoute, line: "to u; redirect_https 301", check: mw(RedirectHTTPS, "", "", 301)},
		{desc: "code and port", base: baseRoute, line: "to u; redirect_https 302 8443", check: mw(RedirectHTTPS, "", "8443", 302)},
		{desc: "port 443 is left out", base: baseRoute, line: "to u; redirect_https 307 443", check: mw(RedirectHTTPS, "", "", 307)},
		{desc: "before to on one line", base: baseRoute, line: "redirect_https to u", check: func(c *Config) bool {
			ms := c.Routes[0].Middlewares
			return c.Routes[0].Upstream == "u" && len(ms) == 1 && ms[0].Kind == RedirectHTTPS && ms[0].Code == 308
		}},
		{desc: "with respond", base: baseRoute, line: `redirect_https; respond 200 "secure"`, check: func(c *Config) bool {
			ms := c.Routes[0].Middlewares
			return len(ms) == 2 && ms[0].Kind == RedirectHTTPS && ms[1].Kind == Respond
		}, warn: `2:1: upstream "u" is not used by any route`},
		{desc: "port alone", base: baseRoute, line: "to u; redirect_https 8443", err: `5:24: redirect_https: invalid status code "8443" (expected 301, 302, 303, 307 or 308; for a port alone write ` + "`redirect_https 308 PORT`)"},
		{desc: "bad code", base: baseRoute, line: "to u; redirect_https 200 443", err: `5:24: redirect_https: invalid status code "200"`},
		{desc: "bad port", base: baseRoute, line: "to u; redirect_https 301 0", err: `5:28: redirect_https: invalid port "0" (expected a port from 1 to 65535)`},
		{desc: "three arguments", base: baseRoute, line: "to u; redirect_https 301 443 x", err: `5:32: expected a new line or ";" after redirect_https [CODE] [PORT], got "x"`},
		{desc: "twice", base: baseRoute, line: "to u; redirect_https; redirect_https 301", err: `5:25: duplicate "redirect_https" in route block`},
		{desc: "alone", base: baseRoute, line: "redirect_https", err: `3:1: route "r" redirects only requests without TLS; it needs ` + "`to UPSTREAM`"},
		{desc: "not in a tcp route", base: baseTop, line: "tcp route db { match HostSNI(`db`); to u; redirect_https }", err: `4:43: unknown directive "redirect_https" in tcp route block`},
	})
}

// FuzzTLSSettings loads arbitrary listen, tls and upstream blocks and
// checks what every loaded configuration promises the listeners: a TLS
// listener has its settings and a certificate source, h2 only over TLS,
// h2c never over it, limits within their bounds.
func FuzzTLSSettings(f *testing.F) {
	f.Add("protocols tls h2; tls { min_version 1.3; ciphers TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; client_ca ca.pem }", "self_signed localhost", "send_proxy v1")
	f.Add("redirect_https 8443; proxy_protocol trusted ::1 10.0.0.0/8; h2 { max_concurrent_streams 5 }", "cert a b default", "protocol h2c")
	f.Add("protocols tls; tls { client_auth optional }", "", "")
	f.Fuzz(func(t *testing.T, listen, store, upstream string) {
		src := "listen l {\n addr :1\n " + listen + "\n}\ntls {\n " + store + "\n}\nupstream u {\n server a:1\n " + upstream + "\n}\nroute r { match Path(`/`); to u }\n"
		cfg, err := loadString(t, src)
		if err != nil {
			return
		}
		l := cfg.Listeners[0]
		tlsOn := slices.Contains(l.Protocols, "tls")
		switch {
		case tlsOn != (l.TLS != nil):
			t.Fatalf("protocols %v with TLS settings %+v", l.Protocols, l.TLS)
		case tlsOn && (l.TLS.MinVersion < tls.VersionTLS12 || l.TLS.HandshakeTimeout <= 0 || (l.TLS.ClientCA == "") != (l.TLS.ClientAuth == "")):
			t.Fatalf("TLS settings %+v", *l.TLS)
		case tlsOn && len(cfg.TLS.Certificates) == 0 && len(cfg.TLS.SelfSigned) == 0:
			t.Fatal("TLS listener without certificates")
		case tlsOn && !slices.Contains(l.Protocols, "http1") && !slices.Contains(l.Protocols, "h2"):
			t.Fatalf("TLS listener offers nothing by ALPN: %v", l.Protocols)
		case slices.Contains(l.Protocols, "h2") != (tlsOn && slices.Contains(l.Protocols, "h2")),
			tlsOn && slices.Contains(l.Protocols, "h2c"):
			t.Fatalf("protocols %v", l.Protocols)
		case tlsOn && l.RedirectHTTPS != 0, l.RedirectHTTPS < 0 || l.RedirectHTTPS > 65535:
			t.Fatalf("redirect_https %d on %v", l.RedirectHTTPS, l.Protocols)
		case l.ProxyProtocol != nil && len(l.ProxyProtocol.Trusted) == 0:
			t.Fatal("proxy_protocol without trusted peers")
		case l.H2.MaxConcurrentStreams < 1 || l.H2.MaxConcurrentStreams > maxStreams ||
			l.H2.MaxFrameSize < minFrameSize || l.H2.MaxFrameSize > maxFrameSize || l.H2.StreamStallTimeout < time.Second:
			t.Fatalf("h2 limits %+v", l.H2)
		case cfg.TLS.TicketRotation < time.Minute:
			t.Fatalf("ticket rotation %v", cfg.TLS.TicketRotation)
		}
		if u := cfg.Upstreams[0]; u.Protocol != "http1" && u.Protocol != "h2c" || u.SendProxy != "" && u.SendProxy != "v1" && u.SendProxy != "v2" {
			t.Fatalf("upstream %+v", u)
		}
	})
}
