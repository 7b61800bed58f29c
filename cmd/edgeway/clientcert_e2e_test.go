package main

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestClientCertForwarded: with client_auth, the upstream learns the
// verified client certificate in X-Forwarded-Client-Cert (hash, subject,
// SANs) over HTTP/1.1 and HTTP/2; a client without a certificate, or one
// that sends the field itself, never gets a forged one through.
func TestClientCertForwarded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Header.Get("X-Forwarded-Client-Cert"))
	}))
	t.Cleanup(up.Close)
	ca := testutil.NewCA(t, "client CA")
	dir := t.TempDir()
	srvCert, srvKey := ca.IssueFiles(t, dir, testutil.IssueOptions{}, "site.test")
	caFile := filepath.Join(dir, "clients.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644)
	main := fmt.Sprintf("tls { cert %s %s default }\nlisten sec {\n  addr 127.0.0.1:0\n  protocols tls http1 h2\n  tls { client_ca %s; client_auth optional }\n}\n", srvCert, srvKey, caFile)
	p, _, _ := startEdgeway(t, main, map[string]string{"r.routes": "upstream u { server " + hostPort(up) + " }\nroute r {\n  match PathPrefix(`/`)\n  to u\n}\n"})
	addr := p.Addrs(t, 2)["sec"]
	clientPEM, keyPEM := ca.Issue(t, testutil.IssueOptions{Client: true}, "client.test")
	pair, err := tls.X509KeyPair(clientPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	sum := sha256.Sum256(leaf.Raw)
	want := "Hash=" + hex.EncodeToString(sum[:]) + `;Subject="` + leaf.Subject.String() + `";DNS=client.test`
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	get := func(h2 bool, certs []tls.Certificate, spoof string) string {
		t.Helper()
		return tlsGet(t, addr, roots, h2, certs, "X-Forwarded-Client-Cert", spoof)
	}
	for _, h2 := range []bool{false, true} {
		if got := get(h2, []tls.Certificate{pair}, "Hash=forged"); got != want {
			t.Errorf("h2 %v with a certificate: upstream saw %q, want %q", h2, got, want)
		}
		if got := get(h2, nil, "Hash=forged"); strings.Contains(got, "forged") || got != "" {
			t.Errorf("h2 %v without a certificate: upstream saw %q, want nothing", h2, got)
		}
	}
}

// tlsGet sends GET / to addr over TLS for site.test (HTTP/2 when h2,
// else HTTP/1.1) with the client certificates certs and, when value is
// not "", the field name: value; it returns the body.
func tlsGet(t *testing.T, addr string, roots *x509.CertPool, h2 bool, certs []tls.Certificate, name, value string) string {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test", Certificates: certs}, ForceAttemptHTTP2: h2}
	if !h2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://"+addr+"/", nil)
	if value != "" {
		req.Header.Set(name, value)
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestClientCertRules: the ClientCertSAN, ClientCertFingerprint and
// ClientCertSubject matchers route on the certificate client_auth
// verified, over HTTP/1.1 and HTTP/2; a client without one, or one that
// sends X-Forwarded-Client-Cert itself, meets none of them.
func TestClientCertRules(t *testing.T) {
	ca := testutil.NewCA(t, "client CA")
	dir := t.TempDir()
	srvCert, srvKey := ca.IssueFiles(t, dir, testutil.IssueOptions{}, "site.test")
	caFile := filepath.Join(dir, "clients.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644)
	issue := func(name string) (tls.Certificate, *x509.Certificate) {
		certPEM, keyPEM := ca.Issue(t, testutil.IssueOptions{Client: true}, name)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(pair.Certificate[0])
		return pair, leaf
	}
	admin, _ := issue("admin.test")
	pinned, pinnedLeaf := issue("pinned.test")
	named, namedLeaf := issue("named.test")
	other, _ := issue("other.test")
	sum := sha256.Sum256(pinnedLeaf.Raw)
	fp := strings.ToUpper(hex.EncodeToString(sum[:]))
	routes := fmt.Sprintf("route admin {\n  match ClientCertSAN(`admin.test`)\n  respond 200 \"admin\"\n}\n"+
		"route pinned {\n  match ClientCertFingerprint(`%s`)\n  respond 200 \"pinned\"\n}\n"+
		"route named {\n  match ClientCertSubject(`%s`)\n  respond 200 \"named\"\n}\n"+
		"route anyone {\n  match PathPrefix(`/`)\n  priority 1\n  respond 200 \"anyone\"\n}\n", fp, namedLeaf.Subject.String())
	main := fmt.Sprintf("tls { cert %s %s default }\nlisten sec {\n  addr 127.0.0.1:0\n  protocols tls http1 h2\n  tls { client_ca %s; client_auth optional }\n}\n", srvCert, srvKey, caFile)
	p, _, _ := startEdgeway(t, main, map[string]string{"r.routes": routes})
	addr := p.Addrs(t, 2)["sec"]
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, h2 := range []bool{false, true} {
		for _, c := range []struct {
			desc  string
			certs []tls.Certificate
			want  string
		}{
			{"SAN admin.test", []tls.Certificate{admin}, "admin"},
			{"the pinned fingerprint", []tls.Certificate{pinned}, "pinned"},
			{"the named subject", []tls.Certificate{named}, "named"},
			{"another certificate of the CA", []tls.Certificate{other}, "anyone"},
			{"no certificate", nil, "anyone"},
		} {
			if got := tlsGet(t, addr, roots, h2, c.certs, "X-Forwarded-Client-Cert", `Hash=`+fp+`;DNS=admin.test`); got != c.want {
				t.Errorf("h2 %v, %s: answered by %q, want %q", h2, c.desc, got, c.want)
			}
		}
	}
}
