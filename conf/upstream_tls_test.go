package conf

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

func TestUpstreamTLSBlock(t *testing.T) {
	t.Parallel()
	ca := testutil.NewCA(t, "ca")
	cert, key := ca.Issue(t, testutil.IssueOptions{Client: true}, "client")
	files := []string{"ca.pem", string(ca.PEM), "c.pem", string(cert), "c.key", string(key), "junk.pem", "not a certificate"}
	tests := []struct {
		desc  string
		block string
		check func(*UpstreamTLS) bool
		err   string // "line:col: message prefix" of the first error
		warn  string // a warning that must be there
	}{
		{desc: "system roots, defaults", block: "tls { ca system }",
			check: func(u *UpstreamTLS) bool {
				return u.CAPEM == nil && u.MinVersion == tls.VersionTLS12 && !u.InsecureSkipVerify
			}},
		{desc: "empty block", block: "tls {}", check: func(u *UpstreamTLS) bool { return u.CA == "" }},
		{desc: "ca file read at load", block: "tls { ca ca.pem; server_name api.test; min_version 1.3 }",
			check: func(u *UpstreamTLS) bool {
				return string(u.CAPEM) == string(ca.PEM) && u.ServerName == "api.test" && u.MinVersion == tls.VersionTLS13
			}},
		{desc: "client_cert", block: "tls { client_cert c.pem c.key }",
			check: func(u *UpstreamTLS) bool { return u.ClientCert == "c.pem" && len(u.ClientKeyPEM) > 0 }},
		{desc: "verify off warns", block: "tls { verify off }", warn: `4:9: verify off: upstream "u" accepts any certificate`,
			check: func(u *UpstreamTLS) bool { return u.InsecureSkipVerify }},
		{desc: "missing ca file", block: "tls { ca nope.pem }", err: "4:12: ca: open nope.pem"},
		{desc: "ca without certificates", block: "tls { ca junk.pem }", err: "4:3: tls: ca junk.pem: no PEM certificate in the file"},
		{desc: "client key mismatch", block: "tls { client_cert c.pem ca.pem }", err: "4:3: tls: client_cert c.pem:"},
		{desc: "bad min_version", block: "tls { min_version 1.1 }", err: `4:21: unknown TLS version "1.1"`},
		{desc: "bad server_name", block: "tls { server_name a/b }", err: `4:21: server_name: invalid host "a/b"`},
		{desc: "h2c with tls", block: "protocol h2c\n  tls {}", err: `4:3: protocol "h2c" is cleartext HTTP/2 and cannot be used with tls`},
		{desc: "h2 with tls", block: "protocol h2\n  tls {}", check: func(u *UpstreamTLS) bool { return u != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, fmt.Sprintf(baseUpstream, tt.block), files...)
			if tt.err != "" {
				if err == nil {
					t.Fatalf("no error, want %q", tt.err)
				}
				if got := diagnostics(t, err); !strings.HasPrefix(got[0], "main.conf:"+tt.err) {
					t.Fatalf("first error = %q, want prefix %q", got[0], "main.conf:"+tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error:\n%v", err)
			}
			if u := cfg.Upstreams[0].TLS; !tt.check(u) {
				t.Errorf("check failed: %+v", u)
			}
			if tt.warn != "" && !strings.Contains(fmt.Sprint(cfg.Warnings), tt.warn) {
				t.Errorf("warnings %v, want %q", cfg.Warnings, tt.warn)
			}
		})
	}
}

func TestTCPRouteTLSMode(t *testing.T) {
	t.Parallel()
	base := "tls { self_signed a.test }\nlisten s { addr :443; protocols tls http1 }\nupstream u { server a:1 }\ntcp route t {\n  match HostSNI(`a.test`)\n  to u\n  %s\n}\n"
	for _, tt := range []struct {
		desc, line string
		terminate  bool
		err        string
	}{
		{desc: "default passthrough", line: ""},
		{desc: "passthrough", line: "tls passthrough"},
		{desc: "terminate", line: "tls terminate", terminate: true},
		{desc: "bad mode", line: "tls offload", err: `7:7: unknown tcp route tls mode "offload" (expected passthrough, terminate)`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, fmt.Sprintf(base, tt.line))
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(diagnostics(t, err)[0], "main.conf:"+tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.TCPRoutes[0].Terminate; got != tt.terminate {
				t.Errorf("Terminate = %v, want %v", got, tt.terminate)
			}
		})
	}
}

func TestTCPRouteRefusesTLSUpstream(t *testing.T) {
	t.Parallel()
	src := "tls { self_signed a.test }\nlisten s { addr :443; protocols tls http1 }\nupstream u {\n  server a:1\n  tls {}\n}\ntcp route t {\n  match HostSNI(`a.test`)\n  to u\n}\n"
	_, err := loadString(t, src)
	want := `main.conf:9:6: tcp route "t" forwards raw bytes, but upstream "u" has a tls block`
	if err == nil || !strings.HasPrefix(diagnostics(t, err)[0], want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}
