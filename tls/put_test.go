package edgetls

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

func TestPutLayerAndNewestWins(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	af, ak := writePair(t, dir, "a", ca.issue(t, leafOpts{cn: "file-a", names: []string{"a.test"}}))
	bf, bk := writePair(t, dir, "b", ca.issue(t, leafOpts{cn: "file-b", names: []string{"b.test"}}))
	cfg := &conf.TLSStore{Certificates: []conf.Certificate{{CertFile: af, KeyFile: ak}, {CertFile: bf, KeyFile: bk}}}
	s, _ := newTestStore(t)
	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, nil)
	check := func(step, sni, want string) {
		t.Helper()
		if got := servedCN(t, srv.addr, sni, nil); got != want {
			t.Errorf("%s: %s served %q, want %q", step, sni, got, want)
		}
	}

	if err := s.Put(SourceACME, ca.issue(t, leafOpts{cn: "acme-a", names: []string{"a.test", "c.test"}})); err != nil {
		t.Fatal(err)
	}
	check("put after load", "a.test", "acme-a")
	check("put after load", "c.test", "acme-a")
	check("put after load", "b.test", "file-b")
	check("put after load", "", "file-a") // the default stays the first file

	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	check("reload, files unchanged", "a.test", "acme-a")

	// ACME renews: same names and key type replace the old one.
	if err := s.Put(SourceACME, ca.issue(t, leafOpts{cn: "acme-a2", names: []string{"c.test", "a.test"}})); err != nil {
		t.Fatal(err)
	}
	check("renewal", "a.test", "acme-a2")
	if n := len(s.List()); n != 3 {
		t.Errorf("List() has %d certificates after a renewal, want 3", n)
	}

	// An RSA certificate of the same names is a sibling, not a replacement.
	if err := s.Put(SourceACME, ca.issue(t, leafOpts{cn: "acme-a-rsa", names: []string{"a.test", "c.test"}, alg: "rsa"})); err != nil {
		t.Fatal(err)
	}
	rsaOnly := &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
	if got := servedCN(t, srv.addr, "a.test", rsaOnly); got != "acme-a-rsa" {
		t.Errorf("RSA-only client: served %q, want acme-a-rsa", got)
	}
	check("RSA sibling put", "a.test", "acme-a2")

	// The file for a.test changes: it is newer now.
	writePair(t, dir, "a", ca.issue(t, leafOpts{cn: "file-a2", names: []string{"a.test"}}))
	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	check("changed file", "a.test", "file-a2")
	check("changed file", "c.test", "acme-a2")

	active := map[string]bool{}
	for _, ci := range s.List() {
		active[ci.Source+" "+strings.Join(ci.Names, ",")] = ci.Active
	}
	want := map[string]bool{"file a.test": true, "file b.test": true, "acme a.test,c.test": true}
	for k, v := range want {
		if active[k] != v {
			t.Errorf("List: %s active = %v, want %v (all: %v)", k, active[k], v, active)
		}
	}
}

func TestPutOnlyStore(t *testing.T) {
	s, _ := newTestStore(t)
	if err := s.Put(SourceACME, mustSelfSigned(t, "only.test")); err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, nil)
	if got := servedCN(t, srv.addr, "", nil); got != "only.test" {
		t.Errorf("no SNI: served %q, want the put certificate", got)
	}
	ci := s.List()[0]
	if ci.Source != SourceACME || !ci.Default || ci.CertFile != "" {
		t.Errorf("List()[0] = %+v", ci)
	}
}

func TestPutErrors(t *testing.T) {
	s, _ := newTestStore(t)
	good := mustSelfSigned(t, "p.test")
	other := mustSelfSigned(t, "q.test")
	mismatch := &tls.Certificate{Certificate: good.Certificate, PrivateKey: other.PrivateKey}
	noLeaf := &tls.Certificate{Certificate: good.Certificate, PrivateKey: good.PrivateKey}
	ipOnly := mustSelfSigned(t, "127.0.0.1")
	tests := []struct {
		desc, source string
		cert         *tls.Certificate
		want         string
	}{
		{"empty source", "", good, "empty source"},
		{"file source", SourceFile, good, "reserved"},
		{"self-signed source", SourceSelfSigned, good, "reserved"},
		{"nil certificate", SourceACME, nil, "no certificate"},
		{"key mismatch", SourceACME, mismatch, "key does not match"},
		{"no DNS names", SourceACME, ipOnly, "no DNS names"},
		{"garbage DER", SourceACME, &tls.Certificate{Certificate: [][]byte{{1, 2}}, PrivateKey: good.PrivateKey}, "certificate 1 in the chain"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			err := s.Put(tt.source, tt.cert)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Put: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	if len(s.List()) != 0 {
		t.Errorf("failed puts left certificates: %+v", s.List())
	}
	if err := s.Put(SourceACME, noLeaf); err != nil {
		t.Errorf("Put without Leaf: %v", err)
	}
	if noLeaf.Leaf != nil {
		t.Error("Put modified the caller's certificate")
	}
}

func TestClosedStore(t *testing.T) {
	s := NewStore(nil)
	s.Close()
	s.Close() // idempotent
	if err := s.Load(nil); err == nil {
		t.Error("Load after Close succeeded")
	}
	if err := s.Put(SourceACME, mustSelfSigned(t, "x.test")); err == nil {
		t.Error("Put after Close succeeded")
	}
}
