package listeners

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// smuggled is a request that must never reach a handler: both lengths.
const smuggled = "POST /smuggled HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"

// TestNoGuardBypass sends requests that once switched the framing guard off
// for the rest of the connection, each followed by a request with both
// lengths, and checks that the handler never sees the smuggled request.
func TestNoGuardBypass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc      string
		protocols []string
		handler   http.HandlerFunc
		first     string
	}{
		{desc: "PRI line without the rest of the preface", protocols: []string{"http1", "h2c"},
			first: "PRI * HTTP/2.0\r\nHost: a\r\n\r\n"},
		{desc: "HTTP/2 preface on an http1-only listener", protocols: []string{"http1"},
			first: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{desc: "OPTIONS * with Upgrade", first: "OPTIONS * HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\n\r\n"},
		{desc: "101 written without a tunnel", first: "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusSwitchingProtocols) }},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var bad atomic.Int32
			cfg := testConfig()
			cfg.Protocols = tc.protocols
			s := start(t, cfg, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/smuggled" {
					bad.Add(1)
				}
				if tc.handler != nil {
					tc.handler(w, r)
				}
			}))
			out, closed := exchange(t, s, tc.first+smuggled)
			if !closed {
				t.Fatalf("connection left open; got %q", out)
			}
			if n := bad.Load(); n != 0 || strings.Contains(out, "smuggled") {
				t.Fatalf("the smuggled request was served %d times; got %q", n, out)
			}
		})
	}
}

// TestTunnelKeepsEarlyBytes checks that tunnel data sent in the same write
// as the upgrade request reaches a tunnel that reads the hijacked conn.
func TestTunnelKeepsEarlyBytes(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n")
		buf := make([]byte, 5)
		if _, err := io.ReadFull(nc, buf); err == nil { // the conn, not the bufio.Reader
			nc.Write(buf)
		}
	}))
	c := dial(t, s)
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\nhello")
	br := bufio.NewReader(c)
	if res, err := http.ReadResponse(br, nil); err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("response %v, %v", res, err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "hello" {
		t.Fatalf("tunnel got %q, %v", got, err)
	}
}
