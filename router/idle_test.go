package router

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

const testIdle = 200 * time.Millisecond

func shortIdle(u *conf.Upstream) { u.IdleTimeout = testIdle }

func TestIdleStalledResponse(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	fe := proxyTo(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), shortIdle)
	start := time.Now()
	resp, err := http.Get(fe.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil {
		t.Fatalf("body ended cleanly after %q, want an aborted body", b)
	}
	if string(b) != "partial" {
		t.Errorf("body = %q, want partial", b)
	}
	if d := time.Since(start); d < testIdle || d > 10*testIdle {
		t.Errorf("aborted after %v, want about %v", d, testIdle)
	}
}

func TestIdleStalledRequest(t *testing.T) {
	t.Parallel()
	upErr := make(chan error, 1)
	fe := proxyStreaming(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		upErr <- err
	}), shortIdle)
	c, err := net.Dial("tcp", fe.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("status = %d, want 408; %v %q", resp.StatusCode, resp.Header, b)
	}
	if d := time.Since(start); d < testIdle {
		t.Errorf("answered after %v, before the idle timeout %v", d, testIdle)
	}
	if err := <-upErr; err == nil {
		t.Error("upstream read the whole body without error")
	}
}

// TestIdleSlowButMoving checks that a body that keeps moving, each gap
// shorter than the idle timeout, is not cut even when it lasts longer.
func TestIdleSlowButMoving(t *testing.T) {
	t.Parallel()
	fe := proxyTo(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		tick := time.NewTicker(testIdle / 3) // paces the producer
		defer tick.Stop()
		for range 6 {
			io.WriteString(w, "x")
			rc.Flush()
			<-tick.C
		}
	}), shortIdle)
	resp, body := do(t, nil, newReq(t, "GET", fe.URL+"/"))
	if resp.StatusCode != 200 || body != strings.Repeat("x", 6) {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
}

// TestIdleUpstreamNotReading has an upstream that takes the request head
// and then reads nothing: the upload stalls on edgeway's side, not the
// client's, so the answer is 504 (an upstream failure), not 408.
func TestIdleUpstreamNotReading(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fe := proxyStreaming(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // the server notices no close while a body is unread
	}), shortIdle)
	t.Cleanup(func() { close(release) }) // runs before the upstream's Close
	start := time.Now()
	req := newReq(t, "POST", fe.URL+"/up")
	req.Body = io.NopCloser(io.LimitReader(&pattern{}, 64<<20))
	req.ContentLength = 64 << 20
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("status = %d, want 504", resp.StatusCode)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("answered after %v", d)
	}
}
