package listeners

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goproxy "github.com/pires/go-proxyproto"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/sniff"
)

// tlsEnv is a TLS listener that terminates site.test and passes
// pass.test through to a TLS server with its own certificate.
type tlsEnv struct {
	s        *Server
	ca       *testutil.CA
	passCA   *testutil.CA
	passSeen atomic.Int64
}

// clientInfo answers with what the handler saw of the request.
func clientInfo() httpmsg.Handler {
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		reply(w, fmt.Sprintf("proto=%d tls=%v remote=%s local=%s host=%s", r.ProtoMajor, r.TLS, r.RemoteAddr, r.LocalAddr, r.Host))
	})
}

func startTLS(t *testing.T, cfg conf.Listener) *tlsEnv {
	t.Helper()
	e := &tlsEnv{ca: testutil.NewCA(t, "site CA"), passCA: testutil.NewCA(t, "pass CA")}
	site := e.ca.TLSCert(t, testutil.IssueOptions{}, "site.test")

	// The passthrough target: a TLS echo of "pass:" + the first line.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{e.passCA.TLSCert(t, testutil.IssueOptions{}, "pass.test")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.passSeen.Add(1)
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "pass:"+line)
			}()
		}
	}()

	cfg.Protocols = []string{"tls", "http1", "h2"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	o := Options{
		TLS: &tls.Config{Certificates: []tls.Certificate{site}},
		Passthrough: func(ctx context.Context, h *sniff.Hello, client, local netip.AddrPort) (net.Conn, error) {
			if h.SNI != "pass.test" {
				return nil, ErrNoRoute
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", ln.Addr().String())
		},
	}
	s, err := ListenWith(cfg, clientInfo(), log, o)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
		<-served
	})
	e.s = s
	return e
}

// httpsGet requests url over a TLS connection to the listener.
func (e *tlsEnv) httpsGet(t *testing.T, url string, h2 bool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Response, string) {
	t.Helper()
	if dial == nil {
		dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, e.s.Addr().String())
		}
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.ca.Pool}, DialContext: dial, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: ioTimeout}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestTLSTerminatesHTTP1AndH2(t *testing.T) {
	e := startTLS(t, testConfig())
	for _, h2 := range []bool{false, true} {
		res, b := e.httpsGet(t, "https://site.test/p", h2, nil)
		want := map[bool]string{false: "proto=1 tls=true", true: "proto=2 tls=true"}[h2]
		if res.StatusCode != 200 || !strings.HasPrefix(b, want) || !strings.Contains(b, "host=site.test") {
			t.Fatalf("h2=%v: %d %q, want %q", h2, res.StatusCode, b, want)
		}
	}
}

// TestTLSKeepAliveParks: a terminated keep-alive connection is parked
// between requests (no goroutine), and a client that connects ahead of its
// first request is parked too, then served.
func TestTLSKeepAliveParks(t *testing.T) {
	e := startTLS(t, testConfig())
	c, err := tls.Dial("tcp", e.s.Addr().String(), &tls.Config{RootCAs: e.ca.Pool, ServerName: "site.test", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.Eventually(t, ioTimeout, func() bool { return e.s.Stats().Parked == 1 }, "the handshaken connection is not parked: %+v", e.s.Stats())
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "GET /%d HTTP/1.1\r\nHost: site.test\r\n\r\n", i)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(res.Body)
		if !strings.HasPrefix(string(b), "proto=1 tls=true") {
			t.Fatalf("request %d: %q", i, b)
		}
		testutil.Eventually(t, ioTimeout, func() bool { return e.s.Stats().Parked == 1 }, "not parked after request %d: %+v", i, e.s.Stats())
	}
	// Pipelined requests in one write: all answered though TLS may hold
	// the second when the first is read.
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: site.test\r\n\r\nGET /b HTTP/1.1\r\nHost: site.test\r\n\r\n")
	for _, p := range []string{"/a", "/b"} {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("pipelined %s: %v", p, err)
		}
		io.ReadAll(res.Body)
	}
}

func TestTLSPassthroughBySNI(t *testing.T) {
	e := startTLS(t, testConfig())
	c, err := tls.Dial("tcp", e.s.Addr().String(), &tls.Config{RootCAs: e.passCA.Pool, ServerName: "pass.test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if iss := c.ConnectionState().PeerCertificates[0].Issuer.CommonName; iss != "pass CA" {
		t.Fatalf("certificate issued by %q: the connection was not passed through", iss)
	}
	io.WriteString(c, "hello\n")
	c.SetDeadline(time.Now().Add(ioTimeout))
	b, _ := io.ReadAll(c)
	if string(b) != "pass:hello\n" {
		t.Fatalf("got %q from the passed-through server", b)
	}
	if e.passSeen.Load() != 1 {
		t.Fatalf("passthrough server saw %d connections", e.passSeen.Load())
	}
}

func TestTLSPlainRequestOnTLSPort(t *testing.T) {
	e := startTLS(t, testConfig())
	out, closed := exchange(t, e.s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.0 400") || !closed {
		t.Fatalf("got %q closed=%v", out, closed)
	}
}

func TestTLSHandshakeTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.TLS = &conf.ListenerTLS{HandshakeTimeout: 200 * time.Millisecond}
	e := startTLS(t, cfg)
	c := dial(t, e.s)
	io.WriteString(c, "\x16\x03\x01\x00") // a record header cut short
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	start := time.Now()
	if _, err := c.Read(make([]byte, 1)); err == nil || time.Since(start) > ioTimeout-time.Second {
		t.Fatalf("a stalled ClientHello was not cut off (err %v after %v)", err, time.Since(start))
	}
}

func TestProxyProtocol(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trusted string
		version byte
		tls     bool
		served  bool
	}{
		{"v1 trusted", "127.0.0.0/8", 1, false, true},
		{"v2 trusted", "127.0.0.1/32", 2, false, true},
		{"v2 trusted over TLS", "127.0.0.1/32", 2, true, true},
		{"untrusted peer", "10.0.0.0/8", 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ProxyProtocol = &conf.ProxyProtocol{Trusted: []netip.Prefix{netip.MustParsePrefix(tc.trusted)}}
			var addr string
			var e *tlsEnv
			if tc.tls {
				e = startTLS(t, cfg)
				addr = e.s.Addr().String()
			} else {
				addr = start(t, cfg, clientInfo()).Addr().String()
			}
			c := testutil.DialRaw(t, addr)
			src, dst := netip.MustParseAddrPort("203.0.113.7:4711"), netip.MustParseAddrPort("198.51.100.1:443")
			h := goproxy.HeaderProxyFromAddrs(tc.version, net.TCPAddrFromAddrPort(src), net.TCPAddrFromAddrPort(dst))
			if _, err := h.WriteTo(c); err != nil {
				t.Fatal(err)
			}
			var rw io.ReadWriter = c
			if tc.tls {
				tc := tls.Client(c, &tls.Config{RootCAs: e.ca.Pool, ServerName: "site.test", NextProtos: []string{"http/1.1"}})
				if err := tc.Handshake(); err != nil {
					t.Fatal(err)
				}
				rw = tc
			}
			io.WriteString(rw, "GET / HTTP/1.1\r\nHost: site.test\r\nConnection: close\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(ioTimeout))
			b, _ := io.ReadAll(rw)
			if !tc.served {
				if len(b) != 0 {
					t.Fatalf("an untrusted peer was served: %q", b)
				}
				return
			}
			if !strings.Contains(string(b), "remote=203.0.113.7:4711 local=198.51.100.1:443") {
				t.Fatalf("the handler did not see the PROXY header's addresses: %q", b)
			}
		})
	}
}

// TestTLSPassthroughHalfClose: a client that ends its side (close_notify,
// then a TCP half-close) still reads the upstream's answer through a
// passed-through connection.
func TestTLSPassthroughHalfClose(t *testing.T) {
	ca := testutil.NewCA(t, "half CA")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "half.test")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the client's close_notify
		fmt.Fprintf(c, "got %d bytes", len(b))
	}()
	cfg := testConfig()
	cfg.Protocols = []string{"tls", "http1"}
	s, err := ListenWith(cfg, clientInfo(), slog.New(slog.DiscardHandler), Options{
		TLS: &tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "other.test")}},
		Passthrough: func(ctx context.Context, h *sniff.Hello, _, _ netip.AddrPort) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	raw := testutil.DialRaw(t, s.Addr().String())
	c := tls.Client(raw, &tls.Config{RootCAs: ca.Pool, ServerName: "half.test"})
	io.WriteString(c, strings.Repeat("x", 100_000))
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	raw.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(ioTimeout))
	b, err := io.ReadAll(c)
	if string(b) != "got 100000 bytes" {
		t.Fatalf("read %q (%v) after the half-close, want the upstream's answer", b, err)
	}
}
