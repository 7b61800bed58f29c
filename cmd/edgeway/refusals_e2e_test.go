package main

import (
	"bufio"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestRefusalsSeen: each request a listener refuses before routing gets
// its status, an access-log line with a machine-readable reason, and a
// count in edgeway_requests_refused_total; none reaches the upstream.
func TestRefusalsSeen(t *testing.T) {
	var reached atomic.Int32
	up := backend(t, "up")
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) })
	e := startAdmin(t, "log { access on; format text; output stderr }\n", map[string]string{"r.routes": "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  to u\n}\n"})
	cases := []struct {
		desc, raw     string
		status        int
		proto, reason string
	}{
		{"smuggling", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "HTTP/1.1", "both_content_length_and_transfer_encoding"},
		{"target too long", "GET /" + strings.Repeat("a", 40<<10) + " HTTP/1.1\r\nHost: a\r\n\r\n", 414, "HTTP/1", "request_target_too_long"},
		{"HTTP/2.0 request line", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505, "HTTP/1", "http_version_not_supported"},
		{"unclosed IPv6 host", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400, "HTTP/1.1", "invalid_host"},
		{"head too large", "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 40<<10) + "\r\n\r\n", 431, "HTTP/1.1", "request_head_too_large"},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		go conn.Write([]byte(c.raw)) // the listener may answer before reading it all
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Errorf("%s: %v", c.desc, err)
			continue
		}
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.desc, resp.StatusCode, c.status)
		}
		e.p.WaitLog(t, `msg=refused log=access listener=web protocol=`+regexp.QuoteMeta(c.proto)+` client=127\.0\.0\.1:\d+ status=`+strconv.Itoa(c.status)+` reason=`+c.reason)
		sample := `edgeway_requests_refused_total{listener="web",protocol="` + c.proto + `",reason="` + c.reason + `"}`
		testutil.WaitFor(t, sample, func() bool { return e.metric(t, sample) == "1" })
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the upstream saw %d requests, want none", n)
	}
}

// TestRequestIDOverTheWire: over HTTP/1.1 and h2c, the client gets the
// X-Request-Id the upstream got, and the access-log line carries it.
func TestRequestIDOverTheWire(t *testing.T) {
	up := backend(t, "up")
	p, base, _ := startEdgeway(t, "", map[string]string{"r.routes": "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  to u\n}\n"})
	idRE := regexp.MustCompile(`(?im)^x-request-id: ([0-9a-f]{32})\r?$`)
	for _, args := range [][]string{{"-i", base + "/one"}, {"-i", "--http2-prior-knowledge", base + "/two"}} {
		out, code := testutil.Curl(t, args...)
		m := idRE.FindStringSubmatch(out)
		if code != 0 || m == nil {
			t.Fatalf("curl %v: exit %d, no X-Request-Id in:\n%s", args, code, out)
		}
		p.WaitLog(t, `msg=request log=access .* request_id=`+m[1])
	}
}

// TestAccessQueryRedacted: with `access_query redact` a token in a URL
// never reaches the access log; the parameter names do.
func TestAccessQueryRedacted(t *testing.T) {
	up := backend(t, "up")
	e := startAdmin(t, "log { access on; format text; output stderr; access_query redact }\n", map[string]string{"r.routes": "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  to u\n}\n"})
	if _, code := testutil.Curl(t, e.base+"/p?token=s3cret&page=2"); code != 0 {
		t.Fatalf("curl exit %d", code)
	}
	e.p.WaitLog(t, `msg=request log=access .* path=/p query="token=x&page=x" `)
	if strings.Contains(e.p.Log(), "s3cret") {
		t.Errorf("the token reached the log:\n%s", e.p.Log())
	}
}
