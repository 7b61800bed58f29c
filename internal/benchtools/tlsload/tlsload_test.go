package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCert writes a self-signed ECDSA P-256 certificate for names into dir
// and returns the cert and key file paths.
func writeCert(t *testing.T, dir string, names ...string) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startServer serves mode on a loopback port and returns its address; it
// stops when the test ends. It also records the key exchange each
// handshake used.
func startServer(t *testing.T, serve server, names ...string) (string, <-chan tls.CurveID) {
	t.Helper()
	certFile, keyFile := writeCert(t, t.TempDir(), names...)
	cfg, err := serverConfig(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	curves := make(chan tls.CurveID, 1024)
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if cs.Version != tls.VersionTLS13 || cs.DidResume {
			return errors.New("want a full TLS 1.3 handshake")
		}
		select {
		case curves <- cs.CurveID:
		default:
		}
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serve(ln, cfg) }()
	t.Cleanup(func() {
		ln.Close()
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("server: %v", err)
		}
	})
	return ln.Addr().String(), curves
}

func TestIdleConnectionsStayOpenAndAnswer(t *testing.T) {
	addr, curves := startServer(t, serveHTTP, "localhost")
	o := options{addr: addr, n: 30, perSrc: 10, conc: 8}
	res, err := openIdle(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(res.conns)
	if res.ok != 30 || res.failed != 0 {
		t.Fatalf("opened ok=%d failed=%d (first error %v), want 30 and 0", res.ok, res.failed, res.firstErr)
	}
	srcs := map[string]bool{}
	for _, c := range res.conns {
		srcs[c.LocalAddr().(*net.TCPAddr).IP.String()] = true
	}
	if len(srcs) != 3 {
		t.Errorf("connections came from %d source addresses, want 3 (10 each)", len(srcs))
	}
	if ok, of := probeIdle(res.conns, 10, exchange(o, 2)); ok != 10 || of != 10 {
		t.Errorf("probe ok=%d of=%d, want 10 of 10", ok, of)
	}
	if got := <-curves; got != tls.X25519 {
		t.Errorf("key exchange %v, want X25519", got)
	}
}

// TestIdleH2: with -h2 the idle connections speak HTTP/2 (net/http's
// server here), and the probe's second request goes on stream 3.
func TestIdleH2(t *testing.T) {
	addr, _ := startServer(t, serveHTTP, "localhost")
	o := options{addr: addr, n: 6, perSrc: 10, conc: 3, h2: true}
	res, err := openIdle(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll(res.conns)
	if res.ok != 6 || res.failed != 0 {
		t.Fatalf("opened ok=%d failed=%d (first error %v), want 6 and 0", res.ok, res.failed, res.firstErr)
	}
	for _, c := range res.conns {
		if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Fatalf("ALPN chose %q, want h2", p)
		}
	}
	if ok, of := probeIdle(res.conns, 6, exchange(o, 2)); ok != 6 || of != 6 {
		t.Errorf("probe ok=%d of=%d, want 6 of 6", ok, of)
	}
}

func TestIdleCountsFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	res, err := openIdle(context.Background(), options{addr: addr, n: 5, perSrc: 10, conc: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.ok != 0 || res.failed != 5 || res.firstErr == nil {
		t.Errorf("ok=%d failed=%d err=%v, want 0, 5 and an error", res.ok, res.failed, res.firstErr)
	}
}

func TestHandshakeLoad(t *testing.T) {
	for _, withReq := range []bool{false, true} {
		t.Run(map[bool]string{false: "handshake only", true: "with request"}[withReq], func(t *testing.T) {
			addr, _ := startServer(t, serveHTTP, "localhost")
			o := options{addr: addr, conc: 4, duration: 300 * time.Millisecond, withReq: withReq}
			res, err := handshakeLoad(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if res.ok == 0 || res.failed != 0 {
				t.Fatalf("ok=%d failed=%d (first error %v), want some and none failed", res.ok, res.failed, res.firstErr)
			}
			if res.rate() <= 0 || res.elapsed < o.duration {
				t.Errorf("rate %.1f over %s, want > 0 over at least %s", res.rate(), res.elapsed, o.duration)
			}
		})
	}
}

func TestStreamThroughSink(t *testing.T) {
	addr, _ := startServer(t, serveSink, "pass.test")
	tests := []struct {
		desc        string
		total, size int64
	}{
		{desc: "exact multiple of the write size", total: 4 << 20, size: 256 << 10},
		{desc: "short last write", total: 1<<20 + 7, size: 64 << 10},
		{desc: "one byte", total: 1, size: 256 << 10},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := streamTo(ctx, addr, "pass.test", tc.total, tc.size)
			if err != nil {
				t.Fatal(err)
			}
			if res.bytes != tc.total || res.mbPerSec() <= 0 {
				t.Errorf("bytes=%d rate=%.1f, want %d and > 0", res.bytes, res.mbPerSec(), tc.total)
			}
		})
	}
}

func TestStreamReportsAShortCount(t *testing.T) {
	// A "sink" that answers a wrong count must make the run fail.
	addr, _ := startServer(t, func(ln net.Listener, cfg *tls.Config) error {
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			go func() {
				tc := tls.Server(c, cfg)
				defer tc.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := tc.Read(buf); err != nil {
						break
					}
				}
				tc.Write([]byte("12\n"))
			}()
		}
	}, "pass.test")
	_, err := streamTo(context.Background(), addr, "pass.test", 100, 10)
	if err == nil || !strings.Contains(err.Error(), "counted 12") {
		t.Errorf("err = %v, want one naming the wrong count", err)
	}
}

func TestSourceAddrs(t *testing.T) {
	tests := []struct {
		desc         string
		list         string
		need, perSrc int
		want         []string
		wantErr      bool
	}{
		{desc: "one source", need: 5, perSrc: 10, want: []string{"127.0.0.2"}},
		{desc: "rounds up", need: 21, perSrc: 10, want: []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}},
		{desc: "explicit list", list: "127.0.0.9,127.0.0.8", need: 20, perSrc: 10, want: []string{"127.0.0.9", "127.0.0.8"}},
		{desc: "list too short", list: "127.0.0.9", need: 20, perSrc: 10, wantErr: true},
		{desc: "too many", need: 251 * 10, perSrc: 10, wantErr: true},
		{desc: "zero per source", need: 1, perSrc: 0, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := sourceAddrs(tc.list, tc.need, tc.perSrc)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "1GiB", want: 1 << 30},
		{in: "256KiB", want: 256 << 10},
		{in: "10MB", want: 10e6},
		{in: "3M", want: 3 << 20},
		{in: " 4096 ", want: 4096},
		{in: "7B", want: 7},
		{in: "0", wantErr: true},
		{in: "-1KiB", wantErr: true},
		{in: "1.5GiB", wantErr: true},
		{in: "GiB", wantErr: true},
		{in: "9999999999GiB", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseSize(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseSize(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1GiB", "256KiB", "10MB", "4096", "0", "-1", "1e9", "9223372036854775807B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseSize(s)
		if err != nil {
			if v != 0 {
				t.Errorf("parseSize(%q) = %d with error %v, want 0", s, v, err)
			}
			return
		}
		if v <= 0 || v > 1<<62 {
			t.Errorf("parseSize(%q) = %d, want in (0, 2^62]", s, v)
		}
		if !strings.ContainsAny(s, "0123456789") {
			t.Errorf("parseSize(%q) accepted a size with no digits", s)
		}
	})
}

func TestRunRejectsBadModes(t *testing.T) {
	for _, mode := range []string{"", "bogus"} {
		if err := run(options{mode: mode}); err == nil {
			t.Errorf("run(mode %q) = nil, want an error", mode)
		}
	}
}
