package edgetls

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

func TestLoadErrorsKeepOldSet(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	goodCert, goodKey := writePair(t, dir, "good", ca.issue(t, leafOpts{cn: "old", names: []string{"a.test"}}))
	otherCert, otherKey := writePair(t, dir, "other", ca.issue(t, leafOpts{cn: "other", names: []string{"a.test"}}))
	garbage := filepath.Join(dir, "garbage.pem")
	writeFile(t, garbage, []byte("this is not PEM\n"))
	badDER := filepath.Join(dir, "baddre.pem")
	writeFile(t, badDER, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("nope")}))
	missing := filepath.Join(dir, "missing.pem")

	s, _ := newTestStore(t)
	good := conf.Certificate{CertFile: goodCert, KeyFile: goodKey}
	if err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{good}}); err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, nil)
	filesBefore := s.Files()

	tests := []struct {
		desc       string
		cert       conf.Certificate
		wantFile   string
		wantSubstr string
		wantIs     error
	}{
		{"missing cert file", conf.Certificate{CertFile: missing, KeyFile: goodKey},
			missing, "no such file", fs.ErrNotExist},
		{"missing key file", conf.Certificate{CertFile: goodCert, KeyFile: missing},
			missing, "no such file", fs.ErrNotExist},
		{"key does not match", conf.Certificate{CertFile: goodCert, KeyFile: otherKey},
			goodCert, "key does not match certificate", ErrKeyMismatch},
		{"garbage cert PEM", conf.Certificate{CertFile: garbage, KeyFile: goodKey},
			garbage, "no PEM block found", ErrNoPEM},
		{"garbage key PEM", conf.Certificate{CertFile: goodCert, KeyFile: garbage},
			garbage, "no PEM block found", ErrNoPEM},
		{"bad certificate DER", conf.Certificate{CertFile: badDER, KeyFile: goodKey},
			badDER, "certificate 1 in the chain", nil},
		{"key file holds a certificate only", conf.Certificate{CertFile: goodCert, KeyFile: otherCert},
			otherCert, "no PEM block found", ErrNoPEM},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			// A good certificate first: the bad one must undo it too.
			ok := conf.Certificate{CertFile: otherCert, KeyFile: otherKey}
			err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{ok, tt.cert}})
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "tls: ") || !strings.Contains(msg, tt.wantFile) ||
				!strings.Contains(msg, tt.wantSubstr) {
				t.Errorf("error %q: want it to name %s and say %q", msg, tt.wantFile, tt.wantSubstr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			if got := servedCN(t, srv.addr, "a.test", nil); got != "old" {
				t.Errorf("after a failed Load: served %q, want the old certificate", got)
			}
			if got := s.Files(); !slices.Equal(got, filesBefore) {
				t.Errorf("Files after a failed Load = %v, want %v", got, filesBefore)
			}
		})
	}
}

func TestLoadKeyMismatchMessage(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	a, _ := writePair(t, dir, "a", ca.issue(t, leafOpts{cn: "a", names: []string{"a.test"}}))
	_, bk := writePair(t, dir, "b", ca.issue(t, leafOpts{cn: "b", names: []string{"b.test"}}))
	s, _ := newTestStore(t)
	err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{{CertFile: a, KeyFile: bk}}})
	want := "tls: cert " + a + ": key does not match certificate (key file " + bk + ")"
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant    %s", err, want)
	}
}

func TestLoadKeyTypesAndFormats(t *testing.T) {
	ca := newTestCA(t, "CA")
	tests := []struct {
		desc    string
		alg     string
		keyPEM  func(t *testing.T, c *tls.Certificate) []byte
		keyType string
	}{
		{"ECDSA PKCS#8", "ecdsa", pkcs8PEM, "ECDSA P-256"},
		{"ECDSA SEC 1", "ecdsa", func(t *testing.T, c *tls.Certificate) []byte {
			der, err := x509.MarshalECPrivateKey(c.PrivateKey.(*ecdsa.PrivateKey))
			if err != nil {
				t.Fatal(err)
			}
			// openssl writes EC PARAMETERS first; it must be skipped.
			params := pem.EncodeToMemory(&pem.Block{Type: "EC PARAMETERS", Bytes: []byte{6, 8, 42, 134, 72, 206, 61, 3, 1, 7}})
			return append(params, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})...)
		}, "ECDSA P-256"},
		{"RSA PKCS#1", "rsa", func(t *testing.T, c *tls.Certificate) []byte {
			der := x509.MarshalPKCS1PrivateKey(c.PrivateKey.(*rsa.PrivateKey))
			return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der})
		}, "RSA 2048"},
		{"RSA PKCS#8", "rsa", pkcs8PEM, "RSA 2048"},
		{"Ed25519 PKCS#8", "ed25519", pkcs8PEM, "Ed25519"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			c := ca.issue(t, leafOpts{cn: tt.desc, names: []string{"k.test"}, alg: tt.alg})
			cf, _ := writePair(t, dir, "c", c)
			kf := filepath.Join(dir, "k.pem")
			writeFile(t, kf, tt.keyPEM(t, c))
			s, _ := newTestStore(t)
			if err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{{CertFile: cf, KeyFile: kf}}}); err != nil {
				t.Fatal(err)
			}
			if got := s.List()[0].KeyType; got != tt.keyType {
				t.Errorf("KeyType = %q, want %q", got, tt.keyType)
			}
			srv := serverFor(t, s, nil)
			_, err := handshake(t, srv.addr, &tls.Config{ServerName: "k.test", RootCAs: ca.pool()})
			if err != nil {
				t.Errorf("handshake: %v", err)
			}
		})
	}
}

func pkcs8PEM(t *testing.T, c *tls.Certificate) []byte { return pkcs8PEMTB(t, c) }

func pkcs8PEMTB(t testing.TB, c *tls.Certificate) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func TestLoadUnsupportedKeys(t *testing.T) {
	dir := t.TempDir()
	s, _ := newTestStore(t)
	cert := mustSelfSigned(t, "u.test")
	cf, _ := writePair(t, dir, "u", cert)
	enc := filepath.Join(dir, "enc.key")
	writeFile(t, enc, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}))
	x := filepath.Join(dir, "x25519.key")
	xk, err := ecdhKeyPKCS8()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, x, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: xk}))
	for _, tt := range []struct{ file, want string }{
		{enc, "encrypted private keys are not supported"},
		{x, "unsupported private key type"},
	} {
		err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{{CertFile: cf, KeyFile: tt.file}}})
		if err == nil || !strings.Contains(err.Error(), tt.file) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("key %s: error %v, want it to name the file and say %q", tt.file, err, tt.want)
		}
	}
}

func ecdhKeyPKCS8() ([]byte, error) {
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return x509.MarshalPKCS8PrivateKey(k)
}

func mustSelfSigned(t testing.TB, names ...string) *tls.Certificate {
	t.Helper()
	c, err := SelfSigned(names, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadExpiredIsServedWithWarning(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	cf, kf := writePair(t, dir, "old", ca.issue(t, leafOpts{cn: "expired", names: []string{"e.test"},
		notBefore: time.Now().Add(-48 * time.Hour), notAfter: time.Now().Add(-time.Hour)}))
	nf, nk := writePair(t, dir, "nonames", ca.issue(t, leafOpts{cn: "nonames"}))
	s, logs := newTestStore(t)
	err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{{CertFile: cf, KeyFile: kf}, {CertFile: nf, KeyFile: nk}}})
	if err != nil {
		t.Fatalf("Load of an expired certificate: %v", err)
	}
	srv := serverFor(t, s, nil)
	if got := servedCN(t, srv.addr, "e.test", nil); got != "expired" {
		t.Errorf("served %q, want the expired certificate", got)
	}
	out := logs.String()
	for _, want := range []string{"level=WARN", cf + ": certificate expired at", nf + ": certificate has no DNS names"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

func TestLoadNilAndFiles(t *testing.T) {
	ca := newTestCA(t, "CA")
	dir := t.TempDir()
	bf, bk := writePair(t, dir, "b", ca.issue(t, leafOpts{cn: "b", names: []string{"b.test"}}))
	af, ak := writePair(t, dir, "a", ca.issue(t, leafOpts{cn: "a", names: []string{"a.test"}}))
	s, _ := newTestStore(t)
	err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{{CertFile: bf, KeyFile: bk}, {CertFile: af, KeyFile: ak}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{af, ak, bf, bk}
	slices.Sort(want)
	if got := s.Files(); !slices.Equal(got, want) {
		t.Errorf("Files() = %v, want %v", got, want)
	}
	if err := s.Load(nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Files(); len(got) != 0 {
		t.Errorf("Files() after Load(nil) = %v, want none", got)
	}
	if _, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.test"}); !errors.Is(err, ErrNoCertificate) {
		t.Errorf("after Load(nil): %v, want ErrNoCertificate", err)
	}
}

func TestLoadSelfSigned(t *testing.T) {
	s, _ := newTestStore(t)
	cfg := &conf.TLSStore{SelfSigned: []string{"localhost", "demo.test", "127.0.0.1"}}
	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, nil)
	first := servedSerial(t, srv.addr, "demo.test")
	if got := servedSerial(t, srv.addr, "localhost"); got != first {
		t.Error("localhost and demo.test got different certificates, want one with both names")
	}
	list := s.List()
	if len(list) != 1 {
		t.Fatalf("List() has %d entries, want 1", len(list))
	}
	ci := list[0]
	if ci.Source != SourceSelfSigned || ci.KeyType != "ECDSA P-256" || !ci.Default ||
		!slices.Equal(ci.Names, []string{"localhost", "demo.test"}) {
		t.Errorf("List()[0] = %+v", ci)
	}
	if d := ci.NotAfter.Sub(ci.NotBefore); d < 364*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("validity %v, want about a year", d)
	}
	if err := s.Load(cfg); err != nil {
		t.Fatal(err)
	}
	if got := servedSerial(t, srv.addr, "demo.test"); got != first {
		t.Error("a reload with the same self_signed names made a new certificate")
	}
}

func servedSerial(t *testing.T, addr, sni string) string {
	t.Helper()
	cs, err := handshake(t, addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	return cs.PeerCertificates[0].SerialNumber.String()
}

func TestSelfSignedVerifies(t *testing.T) {
	c := mustSelfSigned(t, "a.test", "127.0.0.1")
	pool := x509.NewCertPool()
	pool.AddCert(c.Leaf)
	for _, name := range []string{"a.test", "127.0.0.1"} {
		if _, err := c.Leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: pool}); err != nil {
			t.Errorf("verify for %s: %v", name, err)
		}
	}
	if _, err := SelfSigned(nil, time.Now().Add(time.Hour)); err == nil {
		t.Error("SelfSigned(nil) succeeded, want an error")
	}
}

func TestLoadSameFileTwiceSharesState(t *testing.T) {
	dir := t.TempDir()
	cf, kf := writePair(t, dir, "d", mustSelfSigned(t, "d.test"))
	s, _ := newTestStore(t)
	c := conf.Certificate{CertFile: cf, KeyFile: kf}
	if err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{c, c}}); err != nil {
		t.Fatal(err)
	}
	ix := s.idx.Load()
	if len(ix.entries) != 2 || ix.entries[0].st != ix.entries[1].st || len(s.states) != 1 {
		t.Errorf("a file listed twice got %d states, want one shared", len(s.states))
	}
}
