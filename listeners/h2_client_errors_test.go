package listeners

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"
)

// TestH2ClientMistakes sends requests that are the client's fault over
// h2c to a live router: each is refused with a 4xx or a stream reset,
// never forwarded, and never counted against the upstream server.
func TestH2ClientMistakes(t *testing.T) {
	tests := []struct {
		desc string
		kv   []string
		body []string // DATA frames; the last ends the stream
	}{
		{desc: "content-length twice, different values", kv: []string{":method", "POST", "content-length", "5", "content-length", "6"}, body: []string{"hello"}},
		{desc: "content-length twice, same value", kv: []string{":method", "POST", "content-length", "5", "content-length", "5"}, body: []string{"hello"}},
		{desc: "content-length list", kv: []string{":method", "POST", "content-length", "5, 5"}, body: []string{"hello"}},
		{desc: "content-length not a number", kv: []string{":method", "POST", "content-length", "five"}, body: []string{"hello"}},
		{desc: "content-length negative", kv: []string{":method", "POST", "content-length", "-5"}, body: []string{"hello"}},
		{desc: "content-length with a sign", kv: []string{":method", "POST", "content-length", "+5"}, body: []string{"hello"}},
		{desc: "body shorter than content-length", kv: []string{":method", "POST", "content-length", "10"}, body: []string{"hello"}},
		{desc: "body longer than content-length", kv: []string{":method", "POST", "content-length", "3"}, body: []string{"hello"}},
		{desc: "content-length but no body", kv: []string{":method", "POST", "content-length", "10"}},
		{desc: "method not a token", kv: []string{":method", "GE(T"}},
		{desc: "method with a space", kv: []string{":method", "GET /x"}},
		{desc: "authority with a path", kv: []string{":authority", "example.com/x"}},
		{desc: "authority with userinfo", kv: []string{":authority", "user@example.com"}},
		{desc: "authority with a bad port", kv: []string{":authority", "example.com:8x"}},
		{desc: "authority percent-encoded", kv: []string{":authority", "ex%61mple.com"}},
		{desc: "authority with a quote", kv: []string{":authority", "exa\"mple.com"}},
		{desc: "authority and host differ", kv: []string{"host", "other.example"}},
		{desc: "transfer-encoding", kv: []string{":method", "POST", "transfer-encoding", "chunked"}, body: []string{"5\r\nhello\r\n0\r\n\r\n"}},
		{desc: "connection", kv: []string{"connection", "close"}},
		{desc: "keep-alive", kv: []string{"keep-alive", "timeout=5"}},
		{desc: "proxy-connection", kv: []string{"proxy-connection", "keep-alive"}},
		{desc: "upgrade", kv: []string{"upgrade", "websocket"}},
		{desc: "te other than trailers", kv: []string{"te", "gzip"}},
		{desc: "value with CR LF", kv: []string{"x-a", "1\r\nx-b: 2"}},
		{desc: "value with NUL", kv: []string{"x-a", "1\x002"}},
		{desc: "name with a colon", kv: []string{"x-a:b", "1"}},
		{desc: "name upper case", kv: []string{"X-A", "1"}},
		{desc: "name with a space", kv: []string{"x a", "1"}},
	}
	forEachH2Server(t, testConfig(), func(t *testing.T, cfg conf.Listener) {
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				t.Parallel()
				up := startRawUpstream(t)
				env := startH2Env(t, cfg, up.addr())
				hc := dialH2(t, env.srv.Addr().String())
				hc.request(1, len(tc.body) == 0, tc.kv...)
				for i, b := range tc.body {
					hc.data(1, i == len(tc.body)-1, b)
				}
				ev := hc.readUntil(ioTimeout, answered(1))
				r := ev.streams[1]
				switch {
				case r != nil && r.isReset:
					if r.reset != http2.ErrCodeProtocol && r.reset != http2.ErrCodeStreamClosed {
						t.Errorf("stream reset with %v, want PROTOCOL_ERROR", r.reset)
					}
				case r != nil && r.status != "":
					if r.status[0] != '4' {
						t.Errorf("status %s, want 4xx (body %q)", r.status, r.body)
					}
				case ev.goaway != nil && ev.goaway.ErrCode == http2.ErrCodeProtocol:
				default:
					t.Fatalf("no answer for stream 1 (goaway %v, closed %v)", ev.goaway, ev.closed)
				}
				if got := up.requests(); len(got) > 0 {
					t.Errorf("forwarded to the upstream:\n%s", strings.Join(got, "\n"))
				}
				env.assertHealthy(t)
			})
		}
	})
}

// TestH2Forwarded checks what reaches an HTTP/1.1 upstream of fields that
// HTTP/2 may carry but HTTP/1.1 must not see as is.
func TestH2Forwarded(t *testing.T) {
	forEachH2Server(t, testConfig(), testH2Forwarded)
}

func testH2Forwarded(t *testing.T, cfg conf.Listener) {
	up := startRawUpstream(t)
	env := startH2Env(t, cfg, up.addr())
	hc := dialH2(t, env.srv.Addr().String())
	hc.request(1, true, "te", "trailers", "x-ok", "a\tb", "cookie", "a=1", "cookie", "b=2")
	ev := hc.readUntil(ioTimeout, answered(1))
	if r := ev.streams[1]; r == nil || r.status != "200" {
		t.Fatalf("answer %+v, want 200", r)
	}
	got := up.requests()
	if len(got) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(got))
	}
	head := strings.ToLower(got[0])
	for _, bad := range []string{"\nte:", "transfer-encoding", "\nconnection: keep", "\nupgrade"} {
		if strings.Contains(head, bad) {
			t.Errorf("forwarded %q:\n%s", bad, got[0])
		}
	}
	if !strings.Contains(head, "\r\nx-ok: a\tb\r\n") {
		t.Errorf("x-ok not forwarded as is:\n%q", got[0])
	}
	_ = time.Second
}
