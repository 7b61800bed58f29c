package router

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// certBenchCert is a client certificate with a subject and four SANs,
// as a service mesh issues them.
func certBenchCert(tb testing.TB) *x509.Certificate {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	u, _ := url.Parse("spiffe://example.com/ns/prod/sa/billing")
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7),
		Subject:   pkix.Name{CommonName: "billing", Organization: []string{"Example"}, OrganizationalUnit: []string{"prod"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"billing.prod.example.com", "billing.example.com"}, URIs: []*url.URL{u},
		IPAddresses: []net.IP{net.ParseIP("10.1.2.3")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// certBenchRule evaluates all three certificate matchers (none matches
// but the last), as a table of identity routes would.
const certBenchRule = "ClientCertFingerprint(`0000000000000000000000000000000000000000000000000000000000000000`) || " +
	"ClientCertSAN(`nobody.example.com`) || ClientCertSubject(`CN=billing,OU=prod,O=Example`)"

// BenchmarkClientCert is a request of a TLS connection with a client
// certificate (the same *x509.Certificate on every request, as a
// connection's requests carry it): "match" routes by the three
// certificate matchers and answers itself; "forward" also sends the
// identity upstream in X-Forwarded-Client-Cert.
func BenchmarkClientCert(b *testing.B) {
	cert := certBenchCert(b)
	b.Run("match", func(b *testing.B) {
		rt := New(Options{})
		defer rt.Close()
		err := rt.Apply(&conf.Config{Listeners: []conf.Listener{testListener()},
			Routes: []conf.Route{testRoute(b, "r", certBenchRule, "", conf.Middleware{Kind: conf.Respond, Code: 200})}})
		if err != nil {
			b.Fatal(err)
		}
		certBenchLoop(b, rt, cert)
	})
	b.Run("forward", func(b *testing.B) {
		up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Forwarded-Client-Cert") == "" {
				w.WriteHeader(500)
			}
			io.WriteString(w, "hello")
		}))
		defer up.Close()
		rt := New(Options{})
		defer rt.Close()
		err := rt.Apply(&conf.Config{Listeners: []conf.Listener{testListener()},
			Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
			Routes:    []conf.Route{testRoute(b, "r", certBenchRule, "u")}})
		if err != nil {
			b.Fatal(err)
		}
		certBenchLoop(b, rt, cert)
	})
}

func certBenchLoop(b *testing.B, rt *Router, cert *x509.Certificate) {
	h := rt.Proxy("web")
	req := httpmsg.Request{Method: "GET", Target: "/v1/users", Host: "api.example", ProtoMajor: 1, ProtoMinor: 1,
		TLS: true, TLSVersion: 0x0304, ClientCert: cert, RemoteAddr: netip.MustParseAddrPort("192.0.2.1:41000")}
	fields := httpmsg.Header{{Name: "User-Agent", Value: "bench"}}
	w := &certBenchWriter{}
	b.ReportAllocs()
	for b.Loop() {
		req.Header = append(req.Header[:0], fields...)
		w.status = 0
		h.ServeProxy(w, &req)
		if w.status != 200 {
			b.Fatalf("status %d", w.status)
		}
	}
}

// certBenchWriter is discardProxyWriter that keeps the status.
type certBenchWriter struct {
	discardProxyWriter
	status int
}

func (w *certBenchWriter) WriteHead(status int, h httpmsg.Header, n int64) error {
	w.status = status
	return nil
}
