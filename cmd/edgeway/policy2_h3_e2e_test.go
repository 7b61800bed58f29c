package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
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

	"github.com/quic-go/quic-go/http3"
	"golang.org/x/crypto/bcrypt"

	"github.com/edgeway/edgeway/internal/testutil"
)

// p2H3Request sends one request over HTTP/3 with the given fields and
// returns the response with its body read.
func p2H3Request(t *testing.T, tr *http3.Transport, url string, fields ...string) (*http.Response, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Host = "site.test"
	for i := 0; i+1 < len(fields); i += 2 {
		req.Header.Set(fields[i], fields[i+1])
	}
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("GET %s over HTTP/3: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return res, b
}

// p2H3Site starts edgeway with a TLS listener serving h3 (and extra
// lines in its tls block) and the given route file; it returns the
// process and the listener's https base URL over UDP.
func p2H3Site(t *testing.T, ca *testutil.CA, tlsExtra, routes string) (*testutil.Proc, string) {
	t.Helper()
	cert, key := ca.IssueFiles(t, t.TempDir(), testutil.IssueOptions{}, "site.test")
	tlsBlock := ""
	if tlsExtra != "" {
		tlsBlock = "  tls { " + tlsExtra + " }\n"
	}
	mainExtra := fmt.Sprintf("tls { cert %s %s default }\nlisten websecure {\n  addr 127.0.0.1:%d\n  protocols tls http1 h2 h3\n%s}\n",
		cert, key, testutil.FreePort(t), tlsBlock)
	p, _, _ := startEdgeway(t, mainExtra, map[string]string{"h3.routes": routes})
	return p, "https://" + p.QUICAddrs(t, 1)["websecure"]
}

// TestP2H3BasicAuth: over HTTP/3 a basic_auth route answers 401 with
// the challenge without credentials or with a wrong password, and with
// the user's password goes upstream with X-Remote-User and without the
// Authorization field or a client's own X-Remote-User.
func TestP2H3BasicAuth(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user=%s auth=%q", strings.Join(r.Header.Values("X-Remote-User"), ","), r.Header.Get("Authorization"))
	}))
	t.Cleanup(up.Close)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "users.htpasswd")
	if err := os.WriteFile(users, []byte("alice:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := testutil.NewCA(t, "h3 basic auth CA")
	routes := fmt.Sprintf("upstream echo { server %s }\nroute ops {\n  match PathPrefix(`/`)\n  listeners websecure\n"+
		"  basic_auth %s \"Ops area\"\n  to echo\n}\n", hostPort(up), users)
	_, base := p2H3Site(t, ca, "", routes)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test"}}
	defer tr.Close()
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for _, c := range []struct {
		desc, auth string
	}{{"no credentials", ""}, {"wrong password", basic("alice", "guess")}, {"unknown user", basic("bob", "s3cret")}} {
		res, _ := p2H3Request(t, tr, base+"/", "Authorization", c.auth)
		if res.StatusCode != 401 || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), `Basic realm="Ops area"`) {
			t.Errorf("%s over HTTP/3: %d, WWW-Authenticate %q; want 401 with the realm", c.desc, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
	}
	res, body := p2H3Request(t, tr, base+"/", "Authorization", basic("alice", "s3cret"), "X-Remote-User", "root")
	if res.StatusCode != 200 || string(body) != `user=alice auth=""` {
		t.Errorf("alice over HTTP/3: %d, upstream saw %s; want 200 with user=alice and no Authorization", res.StatusCode, body)
	}
}

// TestP2H3Compress: over HTTP/3 a compress route gzips a text answer for
// a client that accepts gzip (Vary, no Content-Length, the body
// decompressing to the original) and sends it as it is to one that does
// not, or for a HEAD.
func TestP2H3Compress(t *testing.T) {
	text := strings.Repeat("edgeway compresses text answers over every protocol. ", 100)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("ETag", `"v1"`)
		io.WriteString(w, text)
	}))
	t.Cleanup(up.Close)
	ca := testutil.NewCA(t, "h3 compress CA")
	routes := fmt.Sprintf("upstream text { server %s }\nroute r {\n  match PathPrefix(`/`)\n  listeners websecure\n"+
		"  compress { algorithms gzip }\n  to text\n}\n", hostPort(up))
	_, base := p2H3Site(t, ca, "", routes)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test"}, DisableCompression: true}
	defer tr.Close()
	res, body := p2H3Request(t, tr, base+"/page", "Accept-Encoding", "br;q=0.9, gzip")
	if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != "gzip" || res.Header.Get("Vary") != "Accept-Encoding" ||
		res.Header.Get("ETag") != `W/"v1"` || len(body) >= len(text) {
		t.Fatalf("gzip over HTTP/3: %d, Content-Encoding %q, Vary %q, ETag %q, %d bytes of %d", res.StatusCode,
			res.Header.Get("Content-Encoding"), res.Header.Get("Vary"), res.Header.Get("ETag"), len(body), len(text))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(zr); err != nil || string(plain) != text {
		t.Errorf("the gzip body over HTTP/3 decompresses to %d bytes (%v), want the %d of the upstream", len(plain), err, len(text))
	}
	res, body = p2H3Request(t, tr, base+"/page", "Accept-Encoding", "identity")
	if res.Header.Get("Content-Encoding") != "" || string(body) != text {
		t.Errorf("identity over HTTP/3: Content-Encoding %q, %d bytes; want the body as it is", res.Header.Get("Content-Encoding"), len(body))
	}
}

// TestP2H3ClientCert: over HTTP/3 the verified client certificate goes
// upstream in X-Forwarded-Client-Cert (a client's own copy removed) and
// the ClientCertSAN matcher routes on it; the requests of one connection
// all carry the same identity.
func TestP2H3ClientCert(t *testing.T) {
	ca := testutil.NewCA(t, "h3 client CA")
	caFile := filepath.Join(t.TempDir(), "clients.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Join(r.Header.Values("X-Forwarded-Client-Cert"), "|"))
	}))
	t.Cleanup(up.Close)
	routes := fmt.Sprintf("upstream echo { server %s }\nroute admin {\n  match ClientCertSAN(`admin.test`)\n  listeners websecure\n  to echo\n}\n"+
		"route anyone {\n  match PathPrefix(`/`)\n  priority 1\n  listeners websecure\n  respond 200 \"anyone\"\n}\n", hostPort(up))
	_, base := p2H3Site(t, ca, "client_ca "+caFile+"; client_auth optional", routes)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	certPEM, keyPEM := ca.Issue(t, testutil.IssueOptions{Client: true}, "admin.test")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	withCert := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test", Certificates: []tls.Certificate{pair}}}
	defer withCert.Close()
	var first string
	for i := range 3 { // one QUIC connection
		_, body := p2H3Request(t, withCert, base+"/", "X-Forwarded-Client-Cert", "Hash=forged;DNS=admin.test")
		got := string(body)
		if !strings.HasPrefix(got, "Hash=") || strings.Contains(got, "forged") ||
			!strings.HasSuffix(got, `;Subject="`+leaf.Subject.String()+`";DNS=admin.test`) {
			t.Fatalf("request %d with the admin certificate over HTTP/3: upstream saw %q", i, got)
		}
		if i == 0 {
			first = got
		} else if got != first {
			t.Errorf("request %d of the connection: identity %q, the first had %q", i, got, first)
		}
	}
	without := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test"}}
	defer without.Close()
	if _, body := p2H3Request(t, without, base+"/", "X-Forwarded-Client-Cert", "Hash=forged;DNS=admin.test"); string(body) != "anyone" {
		t.Errorf("no certificate over HTTP/3: answered %q, want the anyone route", body)
	}
}
