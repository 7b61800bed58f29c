package httpclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

func TestRoundTripErrors(t *testing.T) {
	t.Parallel()
	big := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"
	tests := []struct {
		desc    string
		handler func(net.Conn)
		kind    Kind
		timeout bool
	}{
		{desc: "not http", handler: canned("HELLO\r\n\r\n", true), kind: KindProtocol},
		{desc: "closed without answer", handler: canned("", true), kind: KindRead},
		{desc: "headers too large", handler: canned(big, true), kind: KindProtocol},
		{desc: "conflicting lengths", handler: canned("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", true), kind: KindProtocol},
		{desc: "response header timeout", handler: canned("", false), kind: KindRead, timeout: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			addr, _ := rawUpstream(t, func(c net.Conn) {
				tc.handler(c)
				if tc.timeout {
					io.Copy(io.Discard, c)
				}
			})
			// Only the timeout case gets a short response timeout: reading
			// a 2 MiB head under -race can take longer than 100 ms, and
			// the refusal must come from the size cap, not from the clock.
			tr := newTestTransport(t, func(u *conf.Upstream) {
				if tc.timeout {
					u.ResponseTimeout = 100 * time.Millisecond
				}
			})
			start := time.Now()
			_, _, err := get(t, tr, "GET", addr)
			var ue *Error
			if !errors.As(err, &ue) || ue.Kind != tc.kind || ue.Timeout() != tc.timeout {
				t.Fatalf("error = %v, want kind %v timeout %v", err, tc.kind, tc.timeout)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if n := tr.idleConns(); n != 0 {
				t.Errorf("%d idle connections after a failure", n)
			}
		})
	}
}

func TestConnectRefused(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	tr := newTestTransport(t, nil)
	_, _, err := get(t, tr, "GET", addr)
	var ue *Error
	if !errors.As(err, &ue) || ue.Kind != KindConnect || ue.Timeout() {
		t.Fatalf("error = %v, want a connect *Error, no timeout", err)
	}
}

func TestContextCancelMidBody(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	tr := newTestTransport(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 7)
	if _, err := io.ReadFull(resp.Body, b); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("body ended cleanly after cancel")
	}
	if n := tr.idleConns(); n != 0 {
		t.Errorf("%d idle connections after a cancelled body", n)
	}
}

func TestContextCancelBeforeHead(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	addr, _ := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err == nil {
			arrived <- struct{}{}
		}
		io.Copy(io.Discard, br)
	})
	tr := newTestTransport(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the upstream holds the request, so that the transport
	// is waiting for the head: no timer that a loaded machine could fire
	// before the request is even sent, or after the response timeout.
	go func() {
		select {
		case <-arrived:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

// closeAfterOne answers one request with keep-alive, then closes: the
// pooled connection is stale when the next request takes it.
func closeAfterOne(closed chan<- struct{}) func(net.Conn) {
	return func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Close()
		closed <- struct{}{}
	}
}

// dropSecond answers the first request of a connection with keep-alive,
// then reads the second and closes without an answer: the server gave up
// on the connection just as the request went out (the keep-alive race that
// a peek before reuse cannot see).
func dropSecond(c net.Conn) {
	br := bufio.NewReader(c)
	if _, err := http.ReadRequest(br); err != nil {
		return
	}
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	if req, err := http.ReadRequest(br); err == nil {
		io.Copy(io.Discard, req.Body)
	}
}

func TestStaleKeepAliveRetried(t *testing.T) {
	t.Parallel()
	addr, conns := rawUpstream(t, dropSecond)
	tr := newTestTransport(t, nil)
	for i := range 2 {
		if _, body, err := get(t, tr, "GET", addr); err != nil || body != "ok" {
			t.Fatalf("request %d: %q %v", i, body, err)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2 (the GET retried once)", n)
	}
}

func TestStaleKeepAliveNotRetriedForPost(t *testing.T) {
	t.Parallel()
	addr, conns := rawUpstream(t, dropSecond)
	tr := newTestTransport(t, nil)
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader("body"))
	_, err := tr.RoundTrip(req)
	var ue *Error
	if !errors.As(err, &ue) || ue.Kind != KindRead {
		t.Errorf("error = %v, want a read *Error (a POST is not resent)", err)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
}

// TestStaleIdlePeeked checks that a pooled connection is peeked at before
// use, so that even a POST avoids one the server closed.
func TestStaleIdlePeeked(t *testing.T) {
	t.Parallel()
	closed := make(chan struct{}, 4)
	addr, conns := rawUpstream(t, closeAfterOne(closed))
	tr := newTestTransport(t, nil)
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	<-closed
	hp := tr.host(addr)
	testutil.WaitFor(t, "the close to reach the client", func() bool {
		hp.mu.Lock()
		defer hp.mu.Unlock()
		return len(hp.idle) == 1 && !hp.idle[0].probe.alive()
	})
	req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader("body"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := conns.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2", n)
	}
}

func TestCloseStopsPooling(t *testing.T) {
	t.Parallel()
	addr, conns := rawUpstream(t, canned("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false))
	tr := newTestTransport(t, nil)
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if n := tr.idleConns(); n != 0 {
		t.Errorf("%d idle connections after Close", n)
	}
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	if n := tr.idleConns(); n != 0 || conns.Load() != 2 {
		t.Errorf("%d idle, %d accepted after Close, want 0 and 2", n, conns.Load())
	}
}

func TestIdleTimeoutOnCheckout(t *testing.T) {
	t.Parallel()
	addr, conns := rawUpstream(t, canned("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false))
	tr := newTestTransport(t, func(u *conf.Upstream) { u.IdleTimeout = time.Hour })
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	hp := tr.host(addr)
	hp.mu.Lock()
	hp.idle[0].idleAt -= int64(2 * time.Hour)
	hp.mu.Unlock()
	if _, _, err := get(t, tr, "GET", addr); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("server accepted %d connections, want 2 (the aged one dropped)", n)
	}
	hp.mu.Lock()
	hp.idle[0].idleAt -= int64(2 * time.Hour)
	hp.mu.Unlock()
	tr.reap()
	if n := tr.idleConns(); n != 0 {
		t.Errorf("%d idle connections after reaping", n)
	}
}
