package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/edgeway/edgeway/internal/testgrpc"
	"github.com/edgeway/edgeway/internal/testutil"
)

// tlsBackend is an HTTPS server on loopback with cert; with clientCAs it
// requires a client certificate they sign. It answers with its name and
// whether the TLS session was resumed, and closes each connection after
// one response, so every request is a new handshake.
func tlsBackend(t *testing.T, name string, cert tls.Certificate, clientCAs *testutil.CA) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprintf(w, "%s resumed=%v", name, r.TLS.DidResume)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		s.TLS.ClientAuth, s.TLS.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs.Pool
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUpstreamTLS dials HTTPS servers: a certificate that verifies is
// served; a wrong CA, a wrong name or an expired certificate is a 502
// with the x509 reason and the server in the log; a server that requires
// a client certificate gets one when client_cert is set; a second
// connection resumes the first one's session.
func TestUpstreamTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := testutil.NewCA(t, "upstream CA"), testutil.NewCA(t, "someone else")
	caFile := writeFile(t, filepath.Join(dir, "ca.pem"), ca.PEM)
	clientCert, clientKey := ca.IssueFiles(t, dir, testutil.IssueOptions{Client: true}, "edgeway.client")

	good := tlsBackend(t, "good", ca.TLSCert(t, testutil.IssueOptions{}, "127.0.0.1"), nil)
	named := tlsBackend(t, "named", ca.TLSCert(t, testutil.IssueOptions{}, "api.test"), nil)
	wrongCA := tlsBackend(t, "wrongca", other.TLSCert(t, testutil.IssueOptions{}, "127.0.0.1"), nil)
	wrongName := tlsBackend(t, "wrongname", ca.TLSCert(t, testutil.IssueOptions{}, "other.test"), nil)
	expired := tlsBackend(t, "expired", ca.TLSCert(t, testutil.IssueOptions{Expired: true}, "127.0.0.1"), nil)
	mtls := tlsBackend(t, "mtls", ca.TLSCert(t, testutil.IssueOptions{}, "127.0.0.1"), ca)

	var routes strings.Builder
	pool := func(name string, s *httptest.Server, tlsExtra string) {
		fmt.Fprintf(&routes, "upstream %s {\n  server %s\n  retries { attempts 0 }\n  tls { ca %s %s }\n}\n"+
			"route %s {\n  match PathPrefix(`/%s`)\n  to %s\n}\n",
			name, s.Listener.Addr(), caFile, tlsExtra, name, name, name)
	}
	pool("good", good, "")
	pool("named", named, "; server_name api.test")
	pool("wrongca", wrongCA, "")
	pool("wrongname", wrongName, "; server_name api.test")
	pool("expired", expired, "")
	pool("mtls", mtls, fmt.Sprintf("; client_cert %s %s", clientCert, clientKey))
	pool("nocert", mtls, "")
	pool("insecure", wrongCA, "; verify off")
	p, base, _ := startEdgewayIn(t, dir, "", map[string]string{"tls.routes": routes.String()})
	p.WaitLog(t, `verify off: upstream \W+insecure\W+ accepts any certificate`)

	for _, tc := range []struct {
		desc, path string
		status     int
		body       string // the start of the body, for 200
		logged     string // a regexp the log must match, for 502
	}{
		{desc: "verified by IP", path: "/good", status: 200, body: "good"},
		{desc: "verified by server_name", path: "/named", status: 200, body: "named"},
		{desc: "wrong CA", path: "/wrongca", status: 502,
			logged: `server=` + regexp.QuoteMeta(wrongCA.Listener.Addr().String()) + `.*x509: certificate signed by unknown authority`},
		{desc: "wrong name", path: "/wrongname", status: 502,
			logged: `server=` + regexp.QuoteMeta(wrongName.Listener.Addr().String()) + `.*x509: certificate is valid for other.test, not api.test`},
		{desc: "expired", path: "/expired", status: 502,
			logged: `server=` + regexp.QuoteMeta(expired.Listener.Addr().String()) + `.*x509: certificate has expired`},
		{desc: "mTLS with client_cert", path: "/mtls", status: 200, body: "mtls"},
		{desc: "mTLS without client_cert", path: "/nocert", status: 502,
			logged: `upstream=nocert server=` + regexp.QuoteMeta(mtls.Listener.Addr().String()) + `.*tls: certificate required`},
		{desc: "verify off", path: "/insecure", status: 200, body: "wrongca"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			status, body := upstreamTLSGet(t, base+tc.path)
			if status != tc.status || !strings.HasPrefix(body, tc.body) {
				t.Fatalf("GET %s: %d %q, want %d %q...", tc.path, status, body, tc.status, tc.body)
			}
			if tc.logged != "" {
				p.WaitLog(t, tc.logged)
			}
		})
	}

	t.Run("session resumed on a second connection", func(t *testing.T) {
		// The backend closes every connection; a later one resumes.
		testutil.Eventually(t, 20*time.Second, func() bool {
			_, body := upstreamTLSGet(t, base+"/good")
			return body == "good resumed=true"
		}, "no request to the good server resumed its TLS session")
	})
}

func upstreamTLSGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestUpstreamTLSHealth: health checks use the pool's TLS settings, so
// a server whose certificate does not verify is marked down and gets no
// traffic, while one that verifies serves.
func TestUpstreamTLSHealth(t *testing.T) {
	dir := t.TempDir()
	ca, other := testutil.NewCA(t, "upstream CA"), testutil.NewCA(t, "someone else")
	caFile := writeFile(t, filepath.Join(dir, "ca.pem"), ca.PEM)
	good := tlsBackend(t, "good", ca.TLSCert(t, testutil.IssueOptions{}, "127.0.0.1"), nil)
	bad := tlsBackend(t, "bad", other.TLSCert(t, testutil.IssueOptions{}, "127.0.0.1"), nil)
	routes := fmt.Sprintf("upstream app {\n  server %s\n  server %s\n  tls { ca %s }\n"+
		"  health { interval 300ms; timeout 300ms; healthy 1; unhealthy 1; initial healthy }\n}\n"+
		"route app {\n  match PathPrefix(`/`)\n  to app\n}\n", good.Listener.Addr(), bad.Listener.Addr(), caFile)
	p, base, _ := startEdgewayIn(t, dir, "", map[string]string{"app.routes": routes})
	p.WaitLog(t, `upstream server state changed.*server=`+regexp.QuoteMeta(bad.Listener.Addr().String())+
		` from=healthy to=unhealthy .*x509: certificate signed by unknown authority`)
	for range 10 {
		if status, body := upstreamTLSGet(t, base+"/"); status != 200 || !strings.HasPrefix(body, "good") {
			t.Fatalf("got %d %q, want every request on the good server", status, body)
		}
	}
}

// TestUpstreamTLSGRPC: gRPC to a backend over TLS (protocol h2, ALPN h2),
// and a protocol h2 pool whose server only speaks HTTP/1.1 is a 502 with
// the reason logged.
func TestUpstreamTLSGRPC(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "upstream CA")
	caFile := writeFile(t, filepath.Join(dir, "ca.pem"), ca.PEM)
	srv := grpc.NewServer(grpc.ForceServerCodec(testgrpc.Codec{}),
		grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "grpc.test")}})))
	srv.RegisterService(&testgrpc.Desc, testgrpc.Echo{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	h1 := tlsBackend(t, "h1", ca.TLSCert(t, testutil.IssueOptions{}, "127.0.0.1"), nil)

	routes := fmt.Sprintf("upstream grpc {\n  server %s\n  protocol h2\n  tls { ca %s; server_name grpc.test }\n}\n"+
		"route rpc {\n  match PathPrefix(`/`)\n  to grpc\n}\n"+
		"upstream h1only {\n  server %s\n  protocol h2\n  retries { attempts 0 }\n  tls { ca %s }\n}\n"+
		"route h1only {\n  match PathPrefix(`/h1only`)\n  to h1only\n}\n"+
		"upstream h1fallback {\n  server %s\n  protocol h2\n  fallback http1\n  retries { attempts 0 }\n  tls { ca %s }\n}\n"+
		"route h1fallback {\n  match PathPrefix(`/fallback`)\n  to h1fallback\n}\n", ln.Addr(), caFile, h1.Listener.Addr(), caFile, h1.Listener.Addr(), caFile)
	p, base, _ := startEdgewayIn(t, dir, "", map[string]string{"grpc.routes": routes})
	cc, err := grpc.NewClient("passthrough:///"+strings.TrimPrefix(base, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(testgrpc.Codec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	var out []byte
	if err := cc.Invoke(callCtx(t), testgrpc.Unary, []byte("hello"), &out); err != nil || string(out) != "hello" {
		t.Fatalf("unary over TLS to the backend: %q, %v; want hello", out, err)
	}

	if status, body := upstreamTLSGet(t, base+"/h1only"); status != 502 {
		t.Fatalf("protocol h2 to an HTTP/1.1-only server: %d %q, want 502", status, body)
	}
	p.WaitLog(t, `upstream=h1only .*did not negotiate h2`)
	// With `fallback http1` the same server is spoken to over HTTP/1.1,
	// the first request included.
	for i := range 3 {
		if status, body := upstreamTLSGet(t, base+"/fallback"); status != 200 || !strings.HasPrefix(body, "h1 ") {
			t.Fatalf("request %d through protocol h2 with fallback http1 to an HTTP/1.1-only server: %d %q, want 200 over HTTP/1.1", i, status, body)
		}
	}
}
