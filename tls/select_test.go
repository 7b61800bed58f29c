package edgetls

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

// selectionStore loads a.example.com (ECDSA and RSA), *.example.com,
// first.test (listed first) and default.test (marked default).
func selectionStore(t testing.TB) (*Store, *testCA) {
	t.Helper()
	ca := newTestCA(t, "select CA")
	dir := t.TempDir()
	certs := []struct {
		name string
		opts leafOpts
		def  bool
	}{
		{"first", leafOpts{cn: "first", names: []string{"first.test"}}, false},
		{"a-rsa", leafOpts{cn: "a-rsa", names: []string{"a.example.com"}, alg: "rsa"}, false},
		{"a-ecdsa", leafOpts{cn: "a-ecdsa", names: []string{"a.example.com"}}, false},
		{"wild", leafOpts{cn: "wild", names: []string{"*.example.com"}}, false},
		{"default", leafOpts{cn: "default", names: []string{"default.test"}}, true},
	}
	cfg := &conf.TLSStore{}
	for _, c := range certs {
		cf, kf := writePair(t, dir, c.name, ca.issue(t, c.opts))
		cfg.Certificates = append(cfg.Certificates, conf.Certificate{CertFile: cf, KeyFile: kf, Default: c.def})
	}
	s, _ := newTestStore(t)
	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	return s, ca
}

func serverFor(t testing.TB, s *Store, l *conf.ListenerTLS) *testServer {
	t.Helper()
	cfg, err := s.ServerConfig(l, nil)
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, cfg)
}

func TestSelectionBySNI(t *testing.T) {
	s, _ := selectionStore(t)
	srv := serverFor(t, s, nil)
	tests := []struct {
		desc, sni, want string
	}{
		{"exact", "a.example.com", "a-ecdsa"},
		{"exact uppercase", "A.EXAMPLE.COM", "a-ecdsa"},
		{"exact trailing dot", "a.example.com.", "a-ecdsa"},
		{"first listed exact", "first.test", "first"},
		{"wildcard", "b.example.com", "wild"},
		{"wildcard mixed case", "B.Example.Com", "wild"},
		{"wildcard does not cover the apex", "example.com", "default"},
		{"wildcard covers one label only", "x.b.example.com", "default"},
		{"unknown name", "unknown.test", "default"},
		{"no SNI", "", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := servedCN(t, srv.addr, tt.sni, nil); got != tt.want {
				t.Errorf("SNI %q: served %q, want %q", tt.sni, got, tt.want)
			}
		})
	}
}

func TestSelectionByClientCapabilities(t *testing.T) {
	s, _ := selectionStore(t)
	srv := serverFor(t, s, nil)
	tests := []struct {
		desc   string
		client *tls.Config
		want   string
	}{
		{"TLS 1.3 client", &tls.Config{}, "a-ecdsa"},
		{"TLS 1.2 ECDSA and RSA suites", &tls.Config{MaxVersion: tls.VersionTLS12}, "a-ecdsa"},
		{"TLS 1.2 RSA suites only", &tls.Config{MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305}}, "a-rsa"},
		{"TLS 1.2 ECDSA suites only", &tls.Config{MaxVersion: tls.VersionTLS12,
			CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}, "a-ecdsa"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := servedCN(t, srv.addr, "a.example.com", tt.client); got != tt.want {
				t.Errorf("served %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultIsFirstWhenNoneMarked(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	cfg := &conf.TLSStore{}
	for _, n := range []string{"one", "two"} {
		cf, kf := writePair(t, dir, n, ca.issue(t, leafOpts{cn: n, names: []string{n + ".test"}}))
		cfg.Certificates = append(cfg.Certificates, conf.Certificate{CertFile: cf, KeyFile: kf})
	}
	s, _ := newTestStore(t)
	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, nil)
	if got := servedCN(t, srv.addr, "", nil); got != "one" {
		t.Errorf("no SNI: served %q, want the first certificate %q", got, "one")
	}
	if got := servedCN(t, srv.addr, "two.test", nil); got != "two" {
		t.Errorf("two.test: served %q, want %q", got, "two")
	}
}

// The default brings its RSA sibling: an RSA-only client without SNI still
// gets a certificate it can use.
func TestDefaultRSASibling(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	ec, eck := writePair(t, dir, "ec", ca.issue(t, leafOpts{cn: "ec", names: []string{"d.test"}}))
	rs, rsk := writePair(t, dir, "rsa", ca.issue(t, leafOpts{cn: "rsa", names: []string{"d.test"}, alg: "rsa"}))
	s, _ := newTestStore(t)
	err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{
		{CertFile: ec, KeyFile: eck, Default: true}, {CertFile: rs, KeyFile: rsk}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, nil)
	rsaOnly := &tls.Config{MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
	for _, sni := range []string{"", "other.test"} {
		if got := servedCN(t, srv.addr, sni, rsaOnly); got != "rsa" {
			t.Errorf("RSA-only client, SNI %q: served %q, want rsa", sni, got)
		}
		if got := servedCN(t, srv.addr, sni, nil); got != "ec" {
			t.Errorf("modern client, SNI %q: served %q, want ec", sni, got)
		}
	}
}

// A verifying client accepts the chain: the leaf and its issuer are sent.
func TestVerifiedHandshake(t *testing.T) {
	s, ca := selectionStore(t)
	srv := serverFor(t, s, nil)
	for _, name := range []string{"a.example.com", "zzz.example.com"} {
		_, err := handshake(t, srv.addr, &tls.Config{ServerName: name, RootCAs: ca.pool()})
		if err != nil {
			t.Errorf("verified handshake for %s: %v", name, err)
		}
	}
}

func TestGetCertificateDirect(t *testing.T) {
	s, _ := selectionStore(t)
	tests := []struct {
		desc, sni, want string
	}{
		{"trailing dot", "a.example.com.", "a-ecdsa"},
		{"uppercase and trailing dot", "B.EXAMPLE.COM.", "wild"},
		{"only a dot", ".", "default"},
		{"empty first label", ".example.com", "default"},
		{"too long", strings.Repeat("a", 300) + ".example.com", "default"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: tt.sni})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Leaf.Subject.CommonName; got != tt.want {
				t.Errorf("%q: got %q, want %q", tt.sni, got, tt.want)
			}
		})
	}
}

func TestEmptyStoreFailsHandshake(t *testing.T) {
	s, _ := newTestStore(t)
	if _, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.test"}); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("GetCertificate on an empty store: %v, want ErrNoCertificate", err)
	}
	srv := serverFor(t, s, nil)
	_, err := handshake(t, srv.addr, &tls.Config{ServerName: "a.test", InsecureSkipVerify: true})
	if err == nil || !strings.Contains(err.Error(), "unrecognized name") {
		t.Errorf("client error %v, want an unrecognized name alert", err)
	}
	if err := srv.nextErr(t); !strings.Contains(err.Error(), "no certificates") {
		t.Errorf("server error %v, want it to say there are no certificates", err)
	}
}
