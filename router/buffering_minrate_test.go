package router

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// minRateListener is a listener with body_min_rate 1KiB/s over 1s
// windows, and a body_timeout far longer than the test: only the rate can
// cut the uploads below.
func minRateListener() conf.Listener {
	l := testListener()
	l.BodyTimeout = time.Minute
	l.BodyMinRate = conf.MinRate{Bytes: 1024, Window: time.Second}
	return l
}

// trickle sends a byte every 200 ms to w until stop is closed: never
// silent for long, far below 1KiB/s.
func trickle(w io.Writer, stop <-chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond) // pacing the sender, not waiting for an event
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
		}
	}
}

// TestBufferingMinRate: a client that keeps sending, but below
// body_min_rate, gets 408 with its connection closed, and the upstream
// never sees a connection.
func TestBufferingMinRate(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, minRateListener(), false)
	c, err := net.Dial("tcp", fe.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0123")
	stop := make(chan struct{})
	defer close(stop)
	go trickle(c, stop)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Errorf("answer %d close=%v, want 408 with the connection closed", resp.StatusCode, resp.Close)
	}
	if n := up.conns.Load(); n != 0 {
		t.Errorf("the upstream accepted %d connections for a body sent too slowly, want 0", n)
	}
	released(t, rt, rt.bufs.Limits().Dir)
}

// TestBufferingMinRateFastEnough: a body above the rate, even one that
// takes several windows, goes through whole.
func TestBufferingMinRateFastEnough(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, minRateListener(), false)
	body := randomBytes(64 << 10)
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < len(body); i += 16 << 10 {
			pw.Write(body[i : i+16<<10])
			time.Sleep(400 * time.Millisecond) // pacing the sender: 40 KiB/s, over 1KiB/s
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", fe.URL+"/up", pr)
	req.ContentLength = int64(len(body))
	resp, err := fe.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != digest(body) {
		t.Errorf("answer %d %q, want 200 and the body's digest", resp.StatusCode, b)
	}
	released(t, rt, rt.bufs.Limits().Dir)
}

// TestBufferingMinRateHTTP2: the same minimum holds for an HTTP/2 stream.
func TestBufferingMinRateHTTP2(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, minRateListener(), true)
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	defer close(stop)
	t.Cleanup(func() { pw.Close() })
	go trickle(pw, stop)
	req, _ := http.NewRequest("POST", fe.URL+"/up", pr)
	req.ContentLength = 100000
	resp, err := fe.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.ProtoMajor != 2 {
		t.Errorf("answer %d over %s, want 408 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	if n := up.conns.Load(); n != 0 {
		t.Errorf("the upstream accepted %d connections, want 0", n)
	}
	released(t, rt, rt.bufs.Limits().Dir)
}
