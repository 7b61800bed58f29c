package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/acme/acmetest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// busyScrape starts edgeway with every kind of traffic that gives a metric
// family its samples, and returns a /metrics answer in which all of them
// show: HTTP/1 requests to a live route, to no route and to a dead
// server; a refused request (CL+TE); a TLS site with a served certificate,
// reached over HTTP/2 and HTTP/3; a passed-through TLS connection (a
// tunnel); and an ACME order that fails (pebble validates TLS-ALPN-01 on a
// closed port). The shipped dashboard and alert rules are checked against
// it, and promtool lints it.
func busyScrape(t *testing.T) (*adminEdgeway, string) {
	t.Helper()
	ca := testutil.NewCA(t, "busy scrape CA")
	cert, key := ca.IssueFiles(t, t.TempDir(), testutil.IssueOptions{}, "site.test")
	passCA := testutil.NewCA(t, "busy passthrough CA")
	pass := passthroughServer(t, passCA)
	pebble := acmetest.Start(t, acmetest.Options{HTTPPort: testutil.FreePort(t), TLSPort: testutil.FreePort(t)})
	live := backend(t, "live")
	dead := testutil.FreePort(t)
	port := testutil.FreePort(t)

	main := fmt.Sprintf(`
log { access off }
tls {
  cert %s %s default
  acme {
    directory %s
    ca_root %s
    storage %s
    email ops@example.com
    accept_terms on
    challenges tls-alpn-01
  }
}
listen websecure {
  addr 127.0.0.1:%d
  protocols tls http1 h2 h3
}
`, cert, key, pebble.URL, pebble.RootFile, t.TempDir(), port)
	routes := fmt.Sprintf(`
upstream live { server %s }
upstream dead { server 127.0.0.1:%d }
upstream pt { server %s }
route app {
  match PathPrefix(`+"`/app`"+`)
  to live
}
route down {
  match PathPrefix(`+"`/down`"+`)
  to dead
}
route acme {
  match Host(`+"`fail.acme.test`"+`)
  acme on
  to live
}
tcp route pass {
  match HostSNI(`+"`pass.test`"+`)
  listeners websecure
  to pt
}
`, hostPort(live), dead, strings.TrimPrefix(pass.URL, "https://"))
	e := startAdmin(t, main, map[string]string{"d.routes": routes})
	testutil.WaitFor(t, "/readyz 200", func() bool { return e.ready(t) == http.StatusOK })
	secure := fmt.Sprintf("127.0.0.1:%d", port)

	for _, tc := range []struct{ path, want string }{{"/app/x", "200"}, {"/nope", "404"}, {"/down", "502"}} {
		out, _ := testutil.Curl(t, "-o", "/dev/null", "-w", "%{http_code}", "--data", "body", e.base+tc.path)
		if out != tc.want {
			t.Fatalf("POST %s: status %q, want %s", tc.path, out, tc.want)
		}
	}
	smuggle := "POST /app HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	if out, _ := testutil.RawRoundTrip(t, strings.TrimPrefix(e.base, "http://"), smuggle); !strings.HasPrefix(out, "HTTP/1.1 400 ") {
		t.Fatalf("CL+TE request: %q, want a 400", out)
	}
	tc := &tls.Config{RootCAs: ca.Pool, ServerName: "site.test"}
	h2 := tlsClient(true, tc)
	if a := h3Do(t, h2, nil, "GET", "https://"+secure+"/app/tls", "site.test", ""); a.status != 200 {
		t.Fatalf("GET over TLS: %+v", a)
	}
	tr := &http3.Transport{TLSClientConfig: tc}
	defer tr.Close()
	if a := h3Do(t, nil, tr, "GET", "https://"+secure+"/app/h3", "site.test", ""); a.status != 200 {
		t.Fatalf("GET over HTTP/3: %+v", a)
	}
	passThrough(t, secure, passCA)

	samples := []struct {
		metric string
		labels map[string]string // the sample has these, and maybe more
	}{
		{"edgeway_requests_total", map[string]string{"listener": "web", "route": "app", "method": "POST", "code": "2xx"}},
		{"edgeway_requests_total", map[string]string{"listener": "web", "route": "", "method": "POST", "code": "4xx"}},
		{"edgeway_requests_total", map[string]string{"listener": "web", "route": "down", "method": "POST", "code": "5xx"}},
		{"edgeway_requests_total", map[string]string{"listener": "websecure", "route": "app", "method": "GET", "code": "2xx"}},
		{"edgeway_upstream_errors_total", map[string]string{"upstream": "dead", "server": fmt.Sprintf("127.0.0.1:%d", dead), "kind": "connect"}},
		{"edgeway_requests_refused_total", map[string]string{"listener": "web", "protocol": "HTTP/1.1", "reason": "both_content_length_and_transfer_encoding"}},
		{"edgeway_tunnels_total", map[string]string{"listener": "websecure", "route": "pass", "kind": "passthrough"}}, // either side may close first
		{"edgeway_acme_failures_total", map[string]string{"name": "fail.acme.test", "reason": "challenge_failed"}},
	}
	var body string
	scraped := false
	t.Cleanup(func() {
		if !scraped && body != "" {
			t.Logf("last /metrics, edgeway_ samples:\n%s\nedgeway log:\n%s", edgewaySamples(body), e.p.Log())
		}
	})
	// The counters are read at scrape time, and the ACME order fails in
	// the background: wait until every sample shows.
	testutil.Eventually(t, 60*time.Second, func() bool {
		var code int
		code, body = e.do(t, http.MethodGet, "/metrics", true)
		if code != http.StatusOK {
			return false
		}
		for _, s := range samples {
			if !hasSampleWith(body, s.metric, s.labels) {
				return false
			}
		}
		return true
	}, "waiting for the traffic's samples in /metrics")
	scraped = true
	return e, body
}

// passthroughServer is a TLS server for pass.test with its own
// certificate, for a tcp route to pass connections through to.
func passthroughServer(t *testing.T, ca *testutil.CA) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "passthrough proto=%s\n", r.Proto)
	}))
	s.TLS = &tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "pass.test")}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// passThrough sends one request over a TLS connection to pass.test at
// addr, which edgeway passes through to a server with a certificate of
// ca, and reads the answer to its end.
func passThrough(t *testing.T, addr string, ca *testutil.CA) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool, ServerName: "pass.test"})
	if err != nil {
		t.Fatalf("TLS to pass.test: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: pass.test\r\nConnection: close\r\n\r\n")
	if b, err := io.ReadAll(c); err != nil || !strings.Contains(string(b), "passthrough proto=HTTP/1.1") {
		t.Fatalf("passthrough answer %q, %v", b, err)
	}
}
