package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// tlsSite is edgeway started with one TLS listener that terminates
// a.test (and *.wild.test) and passes pass.test through to a TLS server
// with its own certificate.
type tlsSite struct {
	p        *testutil.Proc
	addr     string // the TLS listener, 127.0.0.1:PORT
	ca       *testutil.CA
	passCA   *testutil.CA // signs the passed-through server's certificate
	roots    *x509.CertPool
	dir      string
	certDir  string
	aCert    string // a.test's certificate and key files
	aKey     string
	passHits func() int
}

func startTLSSite(t *testing.T, listenExtra string) *tlsSite {
	t.Helper()
	ca := testutil.NewCA(t, "edgeway test CA")
	passCA := testutil.NewCA(t, "passthrough upstream CA")
	certDir := t.TempDir()
	aCert, aKey := ca.IssueFiles(t, certDir, testutil.IssueOptions{}, "a.test", "*.wild.test")
	dCert, dKey := ca.IssueFiles(t, certDir, testutil.IssueOptions{}, "default.test")

	// The terminated hosts' upstream: plain HTTP, says which protocol the
	// client used and whether the request came over TLS.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "terminated host=%s proto=%s xfp=%s\n", r.Host, r.Proto, r.Header.Get("X-Forwarded-Proto"))
	}))
	t.Cleanup(up.Close)

	// The passed-through server: TLS with its own certificate for
	// pass.test, which the client must see.
	hits := make(chan struct{}, 1000)
	pass := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- struct{}{}
		fmt.Fprintf(w, "passthrough proto=%s\n", r.Proto)
	}))
	pass.TLS = &tls.Config{Certificates: []tls.Certificate{passCA.TLSCert(t, testutil.IssueOptions{}, "pass.test")}, NextProtos: []string{"h2", "http/1.1"}}
	pass.EnableHTTP2 = true
	pass.StartTLS()
	t.Cleanup(pass.Close)

	mainExtra := fmt.Sprintf(`
tls {
  cert %s %s
  cert %s %s default
}
listen websecure {
  addr 127.0.0.1:0
  protocols tls http1 h2
  read_header_timeout 2s
  %s
}
`, aCert, aKey, dCert, dKey, listenExtra)
	routes := fmt.Sprintf(`
upstream site { server %s }
route a {
  match Host(`+"`a.test`"+`) || HostRegexp(`+"`^.+\\.wild\\.test$`"+`) || Host(`+"`default.test`"+`) || Host(`+"`127.0.0.1`"+`)
  listeners websecure
  to site
}
upstream pt { server %s }
tcp route p {
  match HostSNI(`+"`pass.test`"+`)
  listeners websecure
  to pt
}
`, hostPort(up), strings.TrimPrefix(pass.URL, "https://"))
	p, _, dir := startEdgeway(t, mainExtra, map[string]string{"tls.routes": routes})
	addrs := p.Addrs(t, 2)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	roots.AddCert(passCA.Cert)
	return &tlsSite{p: p, addr: addrs["websecure"], ca: ca, passCA: passCA, roots: roots, dir: dir,
		certDir: certDir, aCert: aCert, aKey: aKey, passHits: func() int { return len(hits) }}
}

// client returns an HTTP client that reaches every name at the site's
// TLS listener, offering h2 when h2 is true.
func (s *tlsSite) client(h2 bool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: s.roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, s.addr)
		},
		ForceAttemptHTTP2: h2,
	}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", url, err)
	}
	return res, string(b)
}

// TestTLSTerminationAndPassthroughOnOnePort is the issue's "done means":
// one TLS listener terminates HTTP/1.1 and HTTP/2 for its hosts and passes
// other SNI names through untouched.
func TestTLSTerminationAndPassthroughOnOnePort(t *testing.T) {
	s := startTLSSite(t, "")
	port := s.addr[strings.LastIndex(s.addr, ":")+1:]

	t.Run("terminated over HTTP/1.1", func(t *testing.T) {
		res, body := get(t, s.client(false), "https://a.test:"+port+"/x")
		if res.StatusCode != 200 || res.Proto != "HTTP/1.1" || !strings.HasPrefix(body, "terminated host=a.test") {
			t.Fatalf("got %s %s %q", res.Proto, res.Status, body)
		}
		if !strings.Contains(body, "xfp=https") {
			t.Errorf("X-Forwarded-Proto is not https: %q", body)
		}
		if cn := res.TLS.PeerCertificates[0].Subject.CommonName; cn != "a.test" {
			t.Errorf("certificate for %q, want a.test", cn)
		}
	})
	t.Run("terminated over HTTP/2", func(t *testing.T) {
		res, body := get(t, s.client(true), "https://a.test:"+port+"/x")
		if res.StatusCode != 200 || res.Proto != "HTTP/2.0" || !strings.HasPrefix(body, "terminated host=a.test") {
			t.Fatalf("got %s %s %q", res.Proto, res.Status, body)
		}
	})
	t.Run("wildcard certificate", func(t *testing.T) {
		res, _ := get(t, s.client(true), "https://x.wild.test:"+port+"/")
		if cn := res.TLS.PeerCertificates[0].Subject.CommonName; cn != "a.test" || res.StatusCode != 200 {
			t.Fatalf("certificate %q status %d, want a.test's (it covers *.wild.test) and 200", cn, res.StatusCode)
		}
	})
	t.Run("passed through", func(t *testing.T) {
		before := s.passHits()
		for _, h2 := range []bool{false, true} {
			res, body := get(t, s.client(h2), "https://pass.test:"+port+"/")
			if !strings.HasPrefix(body, "passthrough") {
				t.Fatalf("body %q: not answered by the passed-through server", body)
			}
			// The client sees the upstream's own certificate, signed by
			// its own CA: edgeway never terminated the connection.
			leaf := res.TLS.PeerCertificates[0]
			if leaf.Subject.CommonName != "pass.test" || leaf.Issuer.CommonName != "passthrough upstream CA" {
				t.Fatalf("certificate %q issued by %q, want the upstream's own", leaf.Subject.CommonName, leaf.Issuer.CommonName)
			}
			if want := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[h2]; res.Proto != want || !strings.Contains(body, want) {
				t.Fatalf("proto %s body %q, want %s end to end", res.Proto, body, want)
			}
		}
		if s.passHits()-before != 2 {
			t.Fatalf("the passthrough server saw %d requests, want 2", s.passHits()-before)
		}
	})
	t.Run("no SNI gets the default certificate", func(t *testing.T) {
		c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: s.roots, ServerName: "", InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "default.test" {
			t.Fatalf("certificate %q, want the default (default.test)", cn)
		}
	})
	t.Run("plain HTTP on the TLS port", func(t *testing.T) {
		out, _ := testutil.RawRoundTrip(t, s.addr, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.0 400") {
			t.Fatalf("plain HTTP on the TLS port got %q, want 400", out)
		}
	})
	t.Run("curl --http2", func(t *testing.T) {
		ca := filepath.Join(t.TempDir(), "ca.pem")
		os.WriteFile(ca, append(append([]byte(nil), s.ca.PEM...), s.passCA.PEM...), 0o600)
		for _, host := range []string{"a.test", "pass.test"} {
			out, err := exec.Command("curl", "-sS", "--http2", "--cacert", ca, "--resolve", host+":"+port+":127.0.0.1",
				"-o", "-", "-w", "\nproto=%{http_version} code=%{http_code}", "https://"+host+":"+port+"/c").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "proto=2 code=200") {
				t.Fatalf("curl %s: %v\n%s", host, err, out)
			}
		}
	})
	t.Run("openssl s_client", func(t *testing.T) {
		if _, err := exec.LookPath("openssl"); err != nil {
			t.Skip("openssl not installed")
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"-servername", "a.test"}, "CN = a.test"},
			{[]string{"-servername", "pass.test"}, "CN = pass.test"},
			{[]string{"-noservername"}, "CN = default.test"},
		} {
			args := append([]string{"s_client", "-connect", s.addr, "-brief"}, tc.args...)
			cmd := exec.Command("openssl", args...)
			cmd.Stdin = strings.NewReader("")
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("openssl %v: want %q in\n%s", tc.args, tc.want, out)
			}
		}
	})
}

// servedSerial returns the serial number of the certificate served for
// name.
func (s *tlsSite) servedSerial(t *testing.T, name string) string {
	t.Helper()
	c, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: s.roots, ServerName: name})
	if err != nil {
		t.Fatalf("handshake for %s: %v", name, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestCertificateFilesReload: a certificate file rewritten in place is
// served without a restart (the watcher reloads it like a route file); a
// broken one is refused with its file named, and the old certificate
// stays served.
func TestCertificateFilesReload(t *testing.T) {
	s := startTLSSite(t, "")
	old := s.servedSerial(t, "a.test")

	if err := os.WriteFile(s.aKey, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(s.p.Log(), "reload refused") && strings.Contains(s.p.Log(), s.aKey)
	}, "a broken key file was not reported by name:\n%s", s.p.Log())
	if got := s.servedSerial(t, "a.test"); got != old {
		t.Fatalf("serial %s after a refused reload, want the old %s", got, old)
	}

	c, k := s.ca.Issue(t, testutil.IssueOptions{}, "a.test", "*.wild.test")
	os.WriteFile(s.aKey, k, 0o600)
	os.WriteFile(s.aCert, c, 0o600)
	testutil.Eventually(t, 10*time.Second, func() bool { return s.servedSerial(t, "a.test") != old },
		"the renewed certificate is not served:\n%s", s.p.Log())
}

// TestCertificatesAPI: the admin API lists the store's certificates and
// /metrics exports their expiry.
func TestCertificatesAPI(t *testing.T) {
	e := startAdmin(t, "tls { self_signed api.test localhost }\nlisten sec { addr 127.0.0.1:0\n protocols tls http1 }", map[string]string{
		"r.routes": "route r { match PathPrefix(`/`)\n respond 200 \"ok\\n\" }\n",
	})
	var list struct {
		Certificates []struct {
			Names    []string  `json:"names"`
			Source   string    `json:"source"`
			NotAfter time.Time `json:"not_after"`
		} `json:"certificates"`
	}
	if code := e.get(t, "/api/certificates", &list); code != 200 {
		t.Fatalf("GET /api/certificates: %d", code)
	}
	certs := list.Certificates
	if len(certs) != 1 || certs[0].Source != "self-signed" || strings.Join(certs[0].Names, ",") != "api.test,localhost" {
		t.Fatalf("certificates: %+v", certs)
	}
	if left := time.Until(certs[0].NotAfter); left < 300*24*time.Hour {
		t.Fatalf("not_after %v: the self-signed certificate should be valid for about a year", certs[0].NotAfter)
	}
	m := e.metric(t, `edgeway_certificate_not_after_timestamp_seconds{key_type="ECDSA P-256",name="api.test",source="self-signed"}`)
	if v, err := strconv.ParseFloat(m, 64); err != nil || int64(v) != certs[0].NotAfter.Unix() {
		t.Fatalf("edgeway_certificate_not_after_timestamp_seconds for api.test = %q, want %d (its not_after)", m, certs[0].NotAfter.Unix())
	}
	// One handshake, then a plain request on the TLS port: counted.
	c, err := tls.Dial("tcp", e.p.Addrs(t, 2)["sec"], &tls.Config{InsecureSkipVerify: true, ServerName: "api.test"})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	testutil.RawRoundTrip(t, e.p.Addrs(t, 2)["sec"], "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
	for sample, want := range map[string]string{
		`edgeway_tls_handshakes_total{listener="sec",result="ok"}`:          "1",
		`edgeway_front_connections_total{listener="sec",outcome="not_tls"}`: "1",
	} {
		if got := e.metric(t, sample); got != want {
			t.Errorf("%s = %q, want %s", sample, got, want)
		}
	}
}

// TestExplainSNI: `edgeway explain --sni` reports the tcp route a
// ClientHello reaches, or that the connection is terminated; --sni ""
// stands for a ClientHello without a server name, which only
// HostSNI(`*`) matches.
func TestExplainSNI(t *testing.T) {
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": `
tls { self_signed a.test }
listen web { addr 127.0.0.1:0
  protocols http1 }
listen sec { addr 127.0.0.1:0
  protocols tls http1 h2 }
upstream db { server 127.0.0.1:5432 }
upstream any { server 127.0.0.1:5433 }
tcp route db {
  match HostSNI(` + "`db.test`" + `)
  to db
}
tcp route nosni {
  match HostSNI(` + "`*`" + `) && !HostSNIRegexp(` + "`.`" + `)
  to any
}
route r { match PathPrefix(` + "`/`" + `)
  respond 200 "ok" }
`})
	file := filepath.Join(dir, "edgeway.conf")
	for _, tc := range []struct {
		sni, want string
		code      int
	}{
		{"db.test", "tcp route db -> upstream db", 0},
		{"DB.test.", "tcp route db -> upstream db", 0},
		{"", "tcp route nosni -> upstream any", 0},
		{"a.test", "no route (no tcp route claims the connection: it is terminated here", 1},
	} {
		out, code := runCLI(t, "explain", "-c", file, "--sni", tc.sni)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("explain --sni %q: exit %d %q, want %d %q", tc.sni, code, out, tc.code, tc.want)
		}
	}
}
