package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/acme/acmetest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// acmeSite is edgeway with a cleartext and a TLS listener on fixed ports,
// pebble validating challenges against them, and one route that asks for
// ACME for its host.
type acmeSite struct {
	pebble            *acmetest.Pebble
	httpPort, tlsPort int
	dir, storage      string
	conf              string
	host              string
}

type acmeSiteOptions struct {
	challenges string // the challenges line's values
	pebble     acmetest.Options
	// badHTTPPort points pebble's HTTP-01 validation at a closed port.
	badHTTPPort, badTLSPort bool
}

func newACMESite(t *testing.T, host string, o acmeSiteOptions) *acmeSite {
	t.Helper()
	s := &acmeSite{httpPort: testutil.FreePort(t), tlsPort: testutil.FreePort(t), dir: t.TempDir(), host: host}
	s.storage = filepath.Join(s.dir, "state", "acme")
	o.pebble.HTTPPort, o.pebble.TLSPort = s.httpPort, s.tlsPort
	if o.badHTTPPort {
		o.pebble.HTTPPort = testutil.FreePort(t)
	}
	if o.badTLSPort {
		o.pebble.TLSPort = testutil.FreePort(t)
	}
	s.pebble = acmetest.Start(t, o.pebble)
	up := backend(t, "acme-site")
	tokenFile := filepath.Join(s.dir, "admin.token")
	main := fmt.Sprintf(`
shutdown_grace 2s
log { access on; format text; output stderr; level debug }
admin { listen 127.0.0.1:0; token_file %q }
listen web {
  addr 127.0.0.1:%d
  protocols http1
}
listen websecure {
  addr 127.0.0.1:%d
  protocols tls http1 h2
}
tls {
  acme {
    directory %s
    ca_root %s
    storage %s
    email ops@example.com
    accept_terms on
    challenges %s
  }
}
include "routes/*.routes"
`, tokenFile, s.httpPort, s.tlsPort, s.pebble.URL, s.pebble.RootFile, s.storage, o.challenges)
	routes := fmt.Sprintf("upstream site { server %s }\nroute a {\n  match Host(`%s`)\n  acme on\n  to site\n}\n", hostPort(up), host)
	testutil.WriteFiles(t, s.dir, map[string]string{"edgeway.conf": main, "routes/a.routes": routes})
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.conf = filepath.Join(s.dir, "edgeway.conf")
	return s
}

func (s *acmeSite) start(t *testing.T) *testutil.Proc {
	t.Helper()
	t.Setenv("EDGEWAY_ACME_RETRY_MIN", "500ms")
	p := testutil.Start(t, s.conf)
	p.Addrs(t, 2)
	return p
}

// client trusts pebble's issuing root only and reaches every name at the
// TLS listener.
func (s *acmeSite) client(t *testing.T) *http.Client {
	t.Helper()
	roots, _ := s.pebble.Roots(t)
	// No keep-alive: every request makes a handshake and sees the
	// certificate served now.
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", s.tlsPort))
		},
	}}
}

// served fetches https://HOST/ and returns the status, body and leaf.
func (s *acmeSite) served(c *http.Client) (int, string, *x509.Certificate, error) {
	res, err := c.Get(fmt.Sprintf("https://%s:%d/", s.host, s.tlsPort))
	if err != nil {
		return 0, "", nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), res.TLS.PeerCertificates[0], err
}

// waitServed waits for a 200 over a certificate pebble issued, and
// returns that certificate.
func (s *acmeSite) waitServed(t *testing.T, p *testutil.Proc, timeout time.Duration) *x509.Certificate {
	t.Helper()
	c := s.client(t)
	var leaf *x509.Certificate
	var last error
	testutil.Eventually(t, timeout, func() bool {
		code, body, l, err := s.served(c)
		last = err
		if err == nil && code == 200 && strings.Contains(body, "acme-site") {
			leaf = l
			return true
		}
		return false
	}, "no 200 from https://%s/ (last error %v); edgeway log:\n%s\npebble log:\n%s", s.host, &last, p.Log(), s.pebble.Log())
	return leaf
}

func stopProc(t *testing.T, p *testutil.Proc) {
	t.Helper()
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.Wait(t, 15*time.Second); code != 0 {
		t.Fatalf("edgeway exited %d; log:\n%s", code, p.Log())
	}
}

// TestACMEHTTP01 is the "done means" for HTTP-01: a route asking
// for ACME plus an acme block pointing at pebble are enough for a client
// trusting pebble's root to get a 200 from https://HOST/. A restart then
// serves the stored certificate without a new order.
func TestACMEHTTP01(t *testing.T) {
	s := newACMESite(t, "http01.acme.test", acmeSiteOptions{challenges: "http-01"})
	began := time.Now()
	p := s.start(t)
	leaf := s.waitServed(t, p, 60*time.Second)
	t.Logf("time from start to first certificate served (HTTP-01): %v", time.Since(began))
	if got := strings.Count(p.Log(), "acme: ordering a certificate"); got != 1 {
		t.Errorf("%d orders, want 1; log:\n%s", got, p.Log())
	}
	checkStoragePerms(t, s.storage)

	// The challenge path never reaches the upstream, even for unknown tokens.
	out, code := testutil.Curl(t, "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Host: "+s.host,
		fmt.Sprintf("http://127.0.0.1:%d/.well-known/acme-challenge/nope", s.httpPort))
	if code != 0 || out != "404" {
		t.Errorf("unknown token: got %q (curl %d), want 404", out, code)
	}

	stopProc(t, p)
	p2 := s.start(t)
	leaf2 := s.waitServed(t, p2, 10*time.Second)
	if !leaf2.Equal(leaf) {
		t.Errorf("after a restart a new certificate is served (serial %v, was %v)", leaf2.SerialNumber, leaf.SerialNumber)
	}
	if strings.Contains(p2.Log(), "acme: ordering a certificate") {
		t.Errorf("the restart ordered a certificate; log:\n%s", p2.Log())
	}
}

// TestACMETLSALPN01 is "done means" for TLS-ALPN-01: pebble validates on
// the TLS listener, through the ClientHello peek.
func TestACMETLSALPN01(t *testing.T) {
	s := newACMESite(t, "alpn.acme.test", acmeSiteOptions{challenges: "tls-alpn-01", badHTTPPort: true})
	began := time.Now()
	p := s.start(t)
	s.waitServed(t, p, 60*time.Second)
	t.Logf("time from start to first certificate served (TLS-ALPN-01): %v", time.Since(began))
}

// TestACMEChallengeFallback: HTTP-01 cannot succeed (pebble validates on a
// closed port), so after its failure the next type, TLS-ALPN-01, gets the
// certificate.
func TestACMEChallengeFallback(t *testing.T) {
	s := newACMESite(t, "fallback.acme.test", acmeSiteOptions{challenges: "http-01 tls-alpn-01", badHTTPPort: true})
	p := s.start(t)
	s.waitServed(t, p, 60*time.Second)
	if !strings.Contains(p.Log(), "challenge failed; trying the next type") {
		t.Errorf("no fallback logged; log:\n%s", p.Log())
	}
}

// TestACMEFailuresServeNothingNew: a failing challenge and a rejected
// order are logged with their reason and retried; nothing is served.
func TestACMEFailures(t *testing.T) {
	for _, tc := range []struct {
		desc   string
		o      acmeSiteOptions
		reason string
	}{
		{desc: "challenge failing", o: acmeSiteOptions{challenges: "tls-alpn-01", badTLSPort: true}, reason: "challenge_failed"},
		{desc: "order rejected", o: acmeSiteOptions{challenges: "http-01", pebble: acmetest.Options{Blocklist: []string{"blocked.acme.test"}}}, reason: "order_rejected"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			host := "fail.acme.test"
			if tc.reason == "order_rejected" {
				host = "blocked.acme.test"
			}
			s := newACMESite(t, host, tc.o)
			p := s.start(t)
			// Two failures in a row: the retry (backoff) happens.
			testutil.Eventually(t, 60*time.Second, func() bool {
				return strings.Count(p.Log(), "reason="+tc.reason) >= 2
			}, "no two %s failures logged; log:\n%s", tc.reason, p.Log())
			if _, _, _, err := s.served(s.client(t)); err == nil {
				t.Errorf("a certificate is served although every order failed")
			}
		})
	}
}

// TestACMERenewalAndCADown: with 15s certificates, a renewal replaces the
// certificate when a third of its life is left; then, with the CA down,
// renewals fail (logged, counted) and the current certificate stays served.
func TestACMERenewalAndCADown(t *testing.T) {
	s := newACMESite(t, "renew.acme.test", acmeSiteOptions{challenges: "http-01",
		pebble: acmetest.Options{Validity: 15 * time.Second}})
	p := s.start(t)
	first := s.waitServed(t, p, 60*time.Second)
	c := s.client(t)
	var second *x509.Certificate
	testutil.Eventually(t, 40*time.Second, func() bool {
		_, _, l, err := s.served(c)
		if err == nil && !l.Equal(first) {
			second = l
			return true
		}
		return false
	}, "the certificate was not renewed; log:\n%s", p.Log())
	if left := time.Until(first.NotAfter); left < 0 {
		t.Errorf("renewed only after expiry (%v late)", -left)
	}
	s.pebble.Stop()
	testutil.Eventually(t, 40*time.Second, func() bool {
		return strings.Count(p.Log(), "reason=ca_unreachable") >= 2
	}, "no failed renewal with the CA down; log:\n%s", p.Log())
	code, _, l, err := s.served(c)
	if err != nil || code != 200 || !l.Equal(second) {
		t.Fatalf("with the CA down: %d %v, same certificate %v", code, err, l != nil && l.Equal(second))
	}

	// The failure shows in the metrics and in the certificate list.
	m := adminAddrRE.FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no admin address in the log:\n%s", p.Log())
	}
	e := &adminEdgeway{p: p, admin: "http://" + m[1]}
	if v := e.metric(t, `edgeway_acme_failures_total{name="renew.acme.test",reason="ca_unreachable"}`); v == "" || v == "0" {
		t.Errorf("edgeway_acme_failures_total for ca_unreachable: %q, want at least 1", v)
	}
	if v := e.metric(t, `edgeway_acme_orders_total{name="renew.acme.test"}`); v == "" || v == "0" || v == "1" {
		t.Errorf("edgeway_acme_orders_total: %q, want the first order and renewals", v)
	}
	var certs struct {
		Certificates []struct {
			Names   []string `json:"names"`
			Source  string   `json:"source"`
			Active  bool     `json:"active"`
			Renewal *struct {
				Reason   string `json:"reason"`
				Failures int    `json:"failures"`
			} `json:"renewal"`
		} `json:"certificates"`
	}
	if code := e.get(t, "/api/certificates", &certs); code != 200 {
		t.Fatalf("GET /api/certificates: %d", code)
	}
	var shown bool
	for _, c := range certs.Certificates {
		if c.Source == "acme" && c.Active && slices.Contains(c.Names, "renew.acme.test") {
			shown = c.Renewal != nil && c.Renewal.Reason == "ca_unreachable" && c.Renewal.Failures >= 1
		}
	}
	if !shown {
		t.Errorf("GET /api/certificates does not show the failed renewal: %+v", certs)
	}
}

// checkStoragePerms: folders 0700, files 0600.
func checkStoragePerms(t *testing.T, root string) {
	t.Helper()
	n := 0
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700 | os.ModeDir
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		n++
		return nil
	})
	if n < 5 {
		t.Errorf("storage holds %d entries, want the account and the certificate", n)
	}
}

// TestACMEReloadOrdersNewName: a route that asks for ACME, added by a
// reload, gets its certificate without a restart; a name that no route
// or acme block names is never ordered, whatever SNI a client sends.
func TestACMEReloadOrdersNewName(t *testing.T) {
	s := newACMESite(t, "first.acme.test", acmeSiteOptions{challenges: "http-01"})
	p := s.start(t)
	s.waitServed(t, p, 60*time.Second)

	up := backend(t, "acme-site")
	testutil.WriteFiles(t, s.dir, map[string]string{"routes/b.routes": fmt.Sprintf(
		"upstream second { server %s }\nroute b {\n  match Host(`second.acme.test`)\n  acme on\n  to second\n}\n", hostPort(up))})
	p.Cmd.Process.Signal(syscall.SIGHUP)
	s.host = "second.acme.test"
	s.waitServed(t, p, 60*time.Second)

	s.host = "stranger.acme.test"
	if _, _, _, err := s.served(s.client(t)); err == nil {
		t.Errorf("https://%s/ answered; no certificate should cover it", s.host)
	}
	if strings.Contains(p.Log(), "name=stranger.acme.test") {
		t.Errorf("an order for a name no route names; log:\n%s", p.Log())
	}
	if got := strings.Count(p.Log(), "acme: ordering a certificate"); got != 2 {
		t.Errorf("%d orders, want 2 (one per configured name); log:\n%s", got, p.Log())
	}
}

// TestACMELocalRecipe runs the README's local ACME recipe
// (scripts/acme-local.sh) on free ports: pebble issues, edgeway serves
// the certificate, and the script shows it.
func TestACMELocalRecipe(t *testing.T) {
	acmetest.Require(t)
	root := testutil.ModuleRoot(t)
	cmd := exec.Command(filepath.Join(root, "scripts", "acme-local.sh"))
	cmd.Env = append(os.Environ(), "EDGEWAY="+testutil.Binary(t), "TOOLS="+filepath.Join(root, "bin", "tools"), "WAIT=90",
		fmt.Sprintf("HTTP_PORT=%d", testutil.FreePort(t)), fmt.Sprintf("TLS_PORT=%d", testutil.FreePort(t)),
		fmt.Sprintf("PEBBLE_PORT=%d", freePortPair(t)), fmt.Sprintf("DNS_PORT=%d", freePortPair(t)))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "served over TLS with a certificate from pebble") ||
		!strings.Contains(string(out), "DNS:demo.acme.test") || !strings.Contains(string(out), "Pebble Intermediate CA") {
		t.Fatalf("scripts/acme-local.sh: %v\n%s", err, out)
	}
}

// freePortPair returns a free port whose successor is free too (the
// recipe puts a management port beside pebble's and the DNS server's).
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		p := testutil.FreePort(t)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no two free ports in a row")
	return 0
}
