package httpclient

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestStrayBytesNeverAnswerTheNextRequest has an upstream send more than
// its response: a body after a HEAD or 204 answer, or a second, unasked-for
// response in the same write. The next request must get its own response
// from a fresh connection, never those bytes.
func TestStrayBytesNeverAnswerTheNextRequest(t *testing.T) {
	t.Parallel()
	const poison = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nPOISON"
	tests := []struct {
		desc, method, first string
	}{
		{"body after HEAD", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n" + poison},
		{"body after 204", "GET", "HTTP/1.1 204 No Content\r\n\r\n" + poison},
		{"second response in one write", "GET", "HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n" + string(make([]byte, 10000)) + poison},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int32
			addr, conns := rawUpstream(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if n.Add(1) == 1 {
						io.WriteString(c, tc.first)
						continue
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood")
				}
			})
			tr := newTestTransport(t, nil)
			req, _ := http.NewRequest(tc.method, "http://"+addr+"/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			// Read as ReverseProxy does, 32 KiB at a time: the body then
			// comes straight from the socket, capped at its length, and
			// what follows stays in the kernel, not in a buffer.
			io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, make([]byte, 32<<10))
			resp.Body.Close()
			// The stray bytes were written with the first response; wait
			// until they are readable, as they would be on a busy proxy.
			hp := tr.host(addr)
			waitIdle(t, hp)
			_, body, err := get(t, tr, "GET", addr)
			if err != nil || body != "good" {
				t.Fatalf("second request got %q, %v; want good", body, err)
			}
			if c := conns.Load(); c != 2 {
				t.Errorf("server accepted %d connections, want 2 (the tainted one dropped)", c)
			}
		})
	}
}

// waitIdle returns once the first connection is either dropped (its stray
// bytes came in with the response) or pooled with its stray bytes
// readable, as they would be by the time a busy proxy reuses it.
func waitIdle(t *testing.T, hp *hostPool) {
	t.Helper()
	testutil.WaitFor(t, "the stray bytes", func() bool {
		hp.mu.Lock()
		defer hp.mu.Unlock()
		return len(hp.idle) == 0 || !hp.idle[0].probe.alive()
	})
}

// TestSwitchingProtocolsOnlyWhenAsked refuses a 101 that does not answer
// the upgrade the request offered, and drops that connection.
func TestSwitchingProtocolsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, offer, resp string
	}{
		{"no upgrade offered", "", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n"},
		{"no upgrade chosen", "echo", "HTTP/1.1 101 Switching Protocols\r\n\r\n"},
		{"another protocol chosen", "echo", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			addr, _ := rawUpstream(t, canned(tc.resp, false))
			tr := newTestTransport(t, nil)
			req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
			if tc.offer != "" {
				req.Header.Set("Connection", "Upgrade")
				req.Header.Set("Upgrade", tc.offer)
			}
			_, err := tr.RoundTrip(req)
			var ue *Error
			if !errors.As(err, &ue) || ue.Kind != KindProtocol {
				t.Fatalf("error = %v, want a protocol *Error", err)
			}
			if n := tr.idleConns(); n != 0 {
				t.Errorf("%d idle connections after a refused 101", n)
			}
		})
	}
}

// TestResponseTimeoutNotRetried checks that a response-header timeout on a
// reused connection is reported once, not retried: the upstream sees the
// request once and the wait is not doubled.
func TestResponseTimeoutNotRetried(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	addr, _ := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			if seen.Add(1) == 1 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			} // later requests get no answer
		}
	})
	// The timeout also bounds the first request, which must be answered:
	// 1s is a margin a loaded machine does not miss on loopback.
	const timeout = time.Second
	tr := newTestTransport(t, func(u *conf.Upstream) { u.ResponseTimeout = timeout })
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err := get(t, tr, "GET", addr)
	var ue *Error
	if !errors.As(err, &ue) || !ue.Timeout() {
		t.Fatalf("error = %v, want a timeout *Error", err)
	}
	if d := time.Since(start); d > 5*timeout {
		t.Errorf("timed out after %v for a %v response_timeout", d, timeout)
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("upstream saw %d requests, want 2 (no retry after a timeout)", n)
	}
}
