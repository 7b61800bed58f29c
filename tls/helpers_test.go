package edgetls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

var (
	serialMu sync.Mutex
	serial   int64 = 1000
)

func nextSerial() *big.Int {
	serialMu.Lock()
	defer serialMu.Unlock()
	serial++
	return big.NewInt(serial)
}

func newTestCA(t testing.TB, cn string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          nextSerial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: c, key: key}
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// leafOpts describes a leaf certificate to issue.
type leafOpts struct {
	cn        string // identifies the certificate in assertions
	names     []string
	alg       string // "ecdsa" (default), "rsa", "ed25519"
	notBefore time.Time
	notAfter  time.Time
	ocsp      string // OCSP responder URL
	client    bool   // client auth usage
}

func genKey(t testing.TB, alg string) crypto.Signer {
	t.Helper()
	var key crypto.Signer
	var err error
	switch alg {
	case "", "ecdsa":
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "rsa":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ed25519":
		_, key, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("unknown alg %q", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// issue returns a leaf signed by ca, with the chain leaf then ca.
func (ca *testCA) issue(t testing.TB, o leafOpts) *tls.Certificate {
	t.Helper()
	key := genKey(t, o.alg)
	if o.notBefore.IsZero() {
		o.notBefore = time.Now().Add(-time.Hour)
	}
	if o.notAfter.IsZero() {
		o.notAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: nextSerial(),
		Subject:      pkix.Name{CommonName: o.cn},
		DNSNames:     o.names,
		NotBefore:    o.notBefore,
		NotAfter:     o.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if o.client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if o.alg == "rsa" {
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	if o.ocsp != "" {
		tmpl.OCSPServer = []string{o.ocsp}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}
}

// writePair writes cert's chain and key as PEM files in dir and returns
// their paths.
func writePair(t testing.TB, dir, name string, cert *tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	var chain []byte
	for _, der := range cert.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile = filepath.Join(dir, name+".pem")
	keyFile = filepath.Join(dir, name+".key")
	writeFile(t, certFile, chain)
	writeFile(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return certFile, keyFile
}

func writeFile(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testLogger returns a logger writing to the test log and a buffer of
// what it wrote.
func testLogger(t testing.TB) (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// logBuf collects log output safely for concurrent writers.
type logBuf struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestStore(t testing.TB) (*Store, *logBuf) {
	t.Helper()
	log, buf := testLogger(t)
	s := NewStore(log)
	t.Cleanup(s.Close)
	return s, buf
}

// testServer is a TLS server on 127.0.0.1 that completes each handshake,
// echoes one byte and closes.
type testServer struct {
	addr   string
	errs   chan error               // server-side handshake errors
	states chan tls.ConnectionState // server-side states of good handshakes
}

func startServer(t testing.TB, cfg *tls.Config) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &testServer{addr: ln.Addr().String(), errs: make(chan error, 100),
		states: make(chan tls.ConnectionState, 100)}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				srv.serve(c, cfg)
			}()
		}
	}()
	return srv
}

func (srv *testServer) serve(c net.Conn, cfg *tls.Config) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	tc := tls.Server(c, cfg)
	if err := tc.Handshake(); err != nil {
		select {
		case srv.errs <- err:
		default:
		}
		return
	}
	select {
	case srv.states <- tc.ConnectionState():
	default:
	}
	var b [1]byte
	if _, err := io.ReadFull(tc, b[:]); err == nil {
		tc.Write(b[:])
	}
}

// nextErr returns the next server-side handshake error, waiting a little
// for it to arrive.
func (srv *testServer) nextErr(t testing.TB) error {
	t.Helper()
	select {
	case err := <-srv.errs:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("no server handshake error")
		return nil
	}
}

// handshake connects to addr with cfg, sends one byte and reads the echo
// (which also processes TLS 1.3 session tickets and a server's rejection
// of the client certificate).
func handshake(t testing.TB, addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte{'x'}); err != nil {
		return c.ConnectionState(), err
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		return c.ConnectionState(), err
	}
	return c.ConnectionState(), nil
}

// servedCN handshakes with SNI sni (none when "") and returns the common
// name of the certificate the server sent.
func servedCN(t testing.TB, addr, sni string, cfg *tls.Config) string {
	t.Helper()
	if cfg == nil {
		cfg = &tls.Config{}
	} else {
		cfg = cfg.Clone()
	}
	cfg.ServerName = sni
	cfg.InsecureSkipVerify = true
	cs, err := handshake(t, addr, cfg)
	if err != nil {
		t.Fatalf("handshake with SNI %q: %v", sni, err)
	}
	return cs.PeerCertificates[0].Subject.CommonName
}
