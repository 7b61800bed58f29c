package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestRefusalsSeenHTTP3: over HTTP/3, a header section over
// max_header_bytes gets 431 on its stream and the next request on the
// same QUIC connection is served; a Host that is not an authority gets
// 400; each is a line and a count.
func TestRefusalsSeenHTTP3(t *testing.T) {
	s := startRefusalSite(t, "")
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool, ServerName: "site.test"}}
	defer tr.Close()
	cl := &http.Client{Transport: tr}
	req, _ := http.NewRequest("GET", "https://"+s.quic+"/big", nil)
	req.Host = "site.test"
	req.Header.Set("X-Big", strings.Repeat("b", 40<<10))
	if code := statusOf(t, cl, req); code != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("40 KiB header: status %d, want 431", code)
	}
	s.seen(t, "websecure", "HTTP/3", 431, "request_head_too_large", 1)
	req, _ = http.NewRequest("GET", "https://"+s.quic+"/after", nil)
	req.Host = "site.test"
	if code := statusOf(t, cl, req); code != http.StatusOK {
		t.Errorf("the request after the 431: status %d, want 200", code)
	}
	req, _ = http.NewRequest("GET", "https://"+s.quic+"/", nil)
	req.Host = "[::1"
	if code := statusOf(t, cl, req); code != http.StatusBadRequest {
		t.Errorf("Host [::1: status %d, want 400", code)
	}
	s.seen(t, "websecure", "HTTP/3", 400, "invalid_host", 1)
	if got := s.metric(t, `edgeway_quic_connections_total{listener="websecure",outcome="accepted"}`); got != "1" {
		t.Errorf("%s QUIC connections, want 1: the 431 must keep the connection", got)
	}
	if n := s.reached.Load(); n != 1 {
		t.Errorf("the upstream saw %d requests, want only the one after the 431", n)
	}
}

// TestRefusalsSeenPerConnection: connections refused before HTTP are a
// line without status (400 for plain text on the TLS port, which gets
// one) and a count, with protocol proxy or tls; a peer that connects and
// closes without a byte is not a refusal.
func TestRefusalsSeenPerConnection(t *testing.T) {
	s := startRefusalSite(t, `
listen lb {
  addr 127.0.0.1:0
  protocols http1
  proxy_protocol trusted 127.0.0.1/32
}
listen lbstrict {
  addr 127.0.0.1:0
  protocols http1
  proxy_protocol trusted 10.0.0.0/8
}
`)
	addrs := s.p.Addrs(t, 4)

	c := testutil.DialRaw(t, s.secure)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: site.test\r\n\r\n")
	if res, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || res.StatusCode != 400 {
		t.Errorf("plain text on the TLS port: %v, %v; want 400", res, err)
	}
	s.seen(t, "websecure", "tls", 400, "not_tls", 1)

	tc, err := tls.Dial("tcp", s.secure, &tls.Config{ServerName: "site.test", RootCAs: x509.NewCertPool()})
	if err == nil {
		tc.Close()
		t.Fatal("a handshake with a client that trusts no CA succeeded")
	}
	s.seen(t, "websecure", "tls", 0, "tls_handshake_failed", 1)

	testutil.DialRaw(t, addrs["lb"]).Close() // a TCP health check: not a refusal
	c = testutil.DialRaw(t, addrs["lb"])
	io.WriteString(c, "GARBAGE\r\n\r\n")
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("a bad PROXY header got an answer, want the connection closed")
	}
	s.seen(t, "lb", "proxy", 0, "proxy_header_invalid", 1)

	c = testutil.DialRaw(t, addrs["lbstrict"])
	io.WriteString(c, "PROXY TCP4 192.0.2.1 192.0.2.2 1000 80\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("an untrusted PROXY peer got an answer, want the connection closed")
	}
	s.seen(t, "lbstrict", "proxy", 0, "proxy_untrusted_peer", 1)
	if got := s.metric(t, `edgeway_requests_refused_total{listener="lb",protocol="proxy",reason="proxy_header_invalid"}`); got != "1" {
		t.Errorf("proxy_header_invalid counted %s, want 1 (the empty connection is none)", got)
	}
}

// TestRefusalFloodCounted: a flood of refused connections is counted
// whole while its lines stop at the budget of 20 a second; the first line
// of a later second says how many were left out.
func TestRefusalFloodCounted(t *testing.T) {
	s := startRefusalSite(t, "")
	plain := func() {
		c := testutil.DialRaw(t, s.secure)
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: site.test\r\n\r\n")
		io.Copy(io.Discard, c)
		c.Close()
	}
	const flood = 60
	for range flood {
		plain()
	}
	sample := `edgeway_requests_refused_total{listener="websecure",protocol="tls",reason="not_tls"}`
	testutil.WaitFor(t, "the flood counted", func() bool { n, _ := strconv.Atoi(s.metric(t, sample)); return n >= flood })
	suppressed := regexp.MustCompile(`msg=refused log=access listener=websecure protocol=tls client=\S+ status=400 reason=not_tls suppressed=(\d+)`)
	// Each probe is one more refusal; the first in a new second carries
	// the count of those left out.
	testutil.WaitFor(t, "a line with suppressed=N", func() bool { plain(); return suppressed.MatchString(s.p.Log()) })
	lines := strings.Count(s.p.Log(), "reason=not_tls")
	n, _ := strconv.Atoi(s.metric(t, sample))
	m := suppressed.FindStringSubmatch(s.p.Log())
	left, _ := strconv.Atoi(m[1])
	if lines >= n || left == 0 || lines+left > n {
		t.Errorf("%d refusals, %d lines, first suppressed=%d: want fewer lines than refusals, the rest counted", n, lines, left)
	}
}
