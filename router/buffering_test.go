package router

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/bodybuf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// sinkUpstream is a real upstream that counts the connections it accepts
// and answers each request with the length and SHA-256 of the body it
// read, and the Expect field it got.
type sinkUpstream struct {
	*httptest.Server
	conns    atomic.Int64
	requests chan struct{} // a value when a handler starts (buffered)
}

func newSinkUpstream(t testing.TB) *sinkUpstream {
	t.Helper()
	u := &sinkUpstream{requests: make(chan struct{}, 64)}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests <- struct{}{}
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			w.WriteHeader(499)
			return
		}
		w.Header().Set("X-Got-Expect", r.Header.Get("Expect"))
		w.Header().Set("X-Got-Content-Length", r.Header.Get("Content-Length"))
		fmt.Fprintf(w, "%d %s", n, hex.EncodeToString(h.Sum(nil)))
	}))
	u.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			u.conns.Add(1)
		}
	}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

// digest is what sinkUpstream answers for body.
func digest(body []byte) string {
	h := sha256.Sum256(body)
	return strconv.Itoa(len(body)) + " " + hex.EncodeToString(h[:])
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{7}).Read(b)
	return b
}

// bufferedProxy is a router in front of up with the given buffers block and
// listener, and its front end: HTTP/1.1, or HTTP/2 over TLS when h2.
func bufferedProxy(t *testing.T, up *sinkUpstream, bufs conf.Buffers, l conf.Listener, h2 bool) (*Router, *httptest.Server) {
	t.Helper()
	cfg := &conf.Config{Listeners: []conf.Listener{l}, Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up.Server)})},
		Routes: []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")}, Buffers: bufs}
	rt := New(Options{})
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	fe := httptest.NewUnstartedServer(rt.Handler("web"))
	if h2 {
		fe.EnableHTTP2 = true
		fe.StartTLS()
	} else {
		fe.Start()
	}
	t.Cleanup(func() { fe.Close(); rt.Close() })
	return rt, fe
}

// released waits until the buffers hold nothing and dir has no file.
func released(t *testing.T, rt *Router, dir string) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() bool {
		s := rt.BufferStats()
		return s.Memory == 0 && s.Disk == 0
	}, "buffers still hold %+v after the requests ended", rt.BufferStats())
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("buffer dir holds %d names (%v), want none: files are unlinked at open", len(ents), err)
	}
}

// TestBufferingSlowUploader: a client that sends its head and a few body
// bytes slowly never causes an upstream connection, and is answered 408
// (Connection: close) once it sends nothing for body_timeout.
func TestBufferingSlowUploader(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	l := testListener()
	// Well above the sender's 100 ms gaps, so that a busy machine's late
	// wake-up is not taken for a stalled body.
	l.BodyTimeout = time.Second
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, l, false)
	c, err := net.Dial("tcp", fe.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123")
	testutil.Eventually(t, 5*time.Second, func() bool { return rt.BufferStats().Memory > 0 },
		"the body was never taken into a buffer")
	for i := range 3 { // progress, each gap under body_timeout
		time.Sleep(100 * time.Millisecond) // pacing the sender, not waiting for an event
		fmt.Fprintf(c, "%d", i)
	}
	last := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Errorf("answer %d close=%v, want 408 with the connection closed", resp.StatusCode, resp.Close)
	}
	if d := time.Since(last); d < l.BodyTimeout {
		t.Errorf("answered %v after the last byte, before body_timeout %v", d, l.BodyTimeout)
	}
	// That the connection then closes is checked on edgeway's own HTTP/1
	// engine (cmd/edgeway TestBufferingE2E); net/http, the front end
	// here, holds it open while it lingers.
	if n := up.conns.Load(); n != 0 {
		t.Errorf("the upstream accepted %d connections for a body never completed, want 0", n)
	}
	released(t, rt, rt.bufs.Limits().Dir)
}

// TestBufferingHoldsUntilComplete: over HTTP/1.1 and HTTP/2, the upstream
// sees no connection while the body arrives, then the whole body (several
// MiB: it spills to disk), byte for byte; nothing stays in the buffers or
// the dir afterwards.
func TestBufferingHoldsUntilComplete(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2=%v", h2), func(t *testing.T) {
			t.Parallel()
			up := newSinkUpstream(t)
			dir := t.TempDir()
			rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: dir, RequestMemory: 256 << 10}, testListener(), h2)
			body := randomBytes(5<<20 + 123)
			pr, pw := io.Pipe()
			req := newReq(t, "POST", fe.URL+"/upload")
			req.Body, req.ContentLength = pr, int64(len(body))
			type result struct {
				resp *http.Response
				body string
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := fe.Client().Do(req)
				if err != nil {
					done <- result{err: err}
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				done <- result{resp: resp, body: string(b), err: err}
			}()
			half := len(body) / 2
			if _, err := pw.Write(body[:half]); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 10*time.Second, func() bool { return rt.BufferStats().Disk > 0 },
				"the first half never spilled to disk: %+v", rt.BufferStats())
			if n := up.conns.Load(); n != 0 {
				t.Fatalf("the upstream accepted %d connections before the body was complete", n)
			}
			pw.Write(body[half:])
			pw.Close()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.resp.StatusCode != 200 || r.body != digest(body) {
				t.Fatalf("answer %d %q, want 200 %q", r.resp.StatusCode, r.body, digest(body))
			}
			if h2 && r.resp.ProtoMajor != 2 {
				t.Errorf("the client spoke HTTP/%d, want 2", r.resp.ProtoMajor)
			}
			if got := r.resp.Header.Get("X-Got-Content-Length"); got != strconv.Itoa(len(body)) {
				t.Errorf("the upstream got Content-Length %q, want %d", got, len(body))
			}
			if s := rt.BufferStats(); s.Spills != 1 || s.Overflows != 0 {
				t.Errorf("stats %+v: want one spill, no overflow", s)
			}
			released(t, rt, dir)
		})
	}
}

// heldBody is a request whose body is sent but for its last byte.
type heldBody struct {
	pw   *io.PipeWriter
	last []byte
	done chan string // the answer: "STATUS BODY"
}

func sendHeld(t *testing.T, c *http.Client, url string, body []byte) *heldBody {
	pr, pw := io.Pipe()
	req := newReq(t, "POST", url)
	req.Body, req.ContentLength = pr, int64(len(body))
	h := &heldBody{pw: pw, last: body[len(body)-1:], done: make(chan string, 1)}
	go func() {
		resp, err := c.Do(req)
		if err != nil {
			h.done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.done <- strconv.Itoa(resp.StatusCode) + " " + string(b)
	}()
	go pw.Write(body[:len(body)-1])
	return h
}

func (h *heldBody) finish() string {
	h.pw.Write(h.last)
	h.pw.Close()
	return <-h.done
}

// TestBufferingMemoryCap: concurrent bodies that together pass the memory
// cap spill to disk, and the memory held stays within the cap (plus each
// body's first 4 KiB); every body then reaches the upstream whole.
func TestBufferingMemoryCap(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	dir := t.TempDir()
	const memCap, n, size = 256 << 10, 6, 192 << 10
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: dir, Memory: memCap}, testListener(), false)
	var held []*heldBody
	var bodies [][]byte
	for i := range n {
		b := randomBytes(size + i)
		bodies = append(bodies, b)
		held = append(held, sendHeld(t, fe.Client(), fe.URL+"/", b))
	}
	// At most one body of 192 KiB fits in 256 KiB: five or more spill.
	testutil.Eventually(t, 10*time.Second, func() bool { return rt.BufferStats().Spills >= n-1 },
		"fewer than %d bodies spilled: %+v", n-1, rt.BufferStats())
	if s := rt.BufferStats(); s.Memory > memCap+n*bodybuf.SmallChunk {
		t.Errorf("memory held %d, over the cap %d (+4 KiB per body)", s.Memory, memCap)
	}
	if c := up.conns.Load(); c != 0 {
		t.Errorf("the upstream accepted %d connections before any body was complete", c)
	}
	for i, h := range held {
		if got, want := h.finish(), "200 "+digest(bodies[i]); got != want {
			t.Errorf("body %d: answer %q, want %q", i, got, want)
		}
	}
	released(t, rt, dir)
}

// TestBufferingDiskCapStreams: a body that would pass the disk cap is not
// refused: it streams (the upstream sees the request before the client
// has sent all of it), whole, and the overflow is counted.
func TestBufferingDiskCapStreams(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	dir := t.TempDir()
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: dir, Memory: 64 << 10, RequestMemory: 64 << 10, Disk: 256 << 10}, testListener(), false)
	body := randomBytes(2 << 20)
	h := sendHeld(t, fe.Client(), fe.URL+"/", body)
	select {
	case <-up.requests:
	case <-time.After(10 * time.Second):
		t.Fatalf("the upstream saw no request while the body was incomplete: %+v", rt.BufferStats())
	}
	if got, want := h.finish(), "200 "+digest(body); got != want {
		t.Fatalf("answer %q, want %q", got, want)
	}
	if s := rt.BufferStats(); s.Overflows != 1 || s.Spills != 1 {
		t.Errorf("stats %+v: want one spill and one overflow", s)
	}
	released(t, rt, dir)
}

// TestBufferingExpectContinue: with buffering on, edgeway itself answers
// Expect: 100-continue, reads the body and sends it without Expect.
func TestBufferingExpectContinue(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	_, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, testListener(), false)
	c, err := net.Dial("tcp", fe.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("first answer line %q (%v), want 100 Continue before the body", line, err)
	}
	br.ReadString('\n') // the empty line ending the 100
	if n := up.conns.Load(); n != 0 {
		t.Errorf("the upstream was connected to before the body was sent (%d)", n)
	}
	io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != digest([]byte("hello")) || resp.Header.Get("X-Got-Expect") != "" {
		t.Errorf("answer %d %q, upstream's Expect %q; want 200, the body, no Expect", resp.StatusCode, b, resp.Header.Get("X-Got-Expect"))
	}
}

// TestBufferingTooLarge: a chunked body that grows past max_body_bytes
// while buffered is answered 413, and no server is connected to.
func TestBufferingTooLarge(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	l := testListener()
	l.MaxBodyBytes = 100 << 10
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, l, false)
	req := newReq(t, "POST", fe.URL+"/")
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(randomBytes(300<<10))), -1
	resp, _ := do(t, nil, req)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || up.conns.Load() != 0 {
		t.Errorf("answer %d, %d upstream connections; want 413 and none", resp.StatusCode, up.conns.Load())
	}
	released(t, rt, rt.bufs.Limits().Dir)
}

// TestBufferingRetryReplays: a buffered body larger than body_buffer is
// sent again whole to the next server after a failed try.
func TestBufferingRetryReplays(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	u := testUpstream("u", []string{closedAddr(t), addr(up.Server)})
	u.Balance = conf.Balance{Policy: conf.RoundRobin}
	u.Retry = conf.DefaultRetry()
	u.Retry.BodyBuffer = 1 << 10
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()}, Upstreams: []conf.Upstream{u},
		Routes: []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")}, Buffers: conf.Buffers{Dir: t.TempDir(), RequestMemory: 64 << 10}}
	_, fe := front(t, cfg, Options{})
	body := randomBytes(1 << 20) // spills: the replay reads the file
	for i := range 2 {           // round robin: one of the two meets the closed server first
		req := newReq(t, "POST", fe.URL+"/")
		req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		if resp, got := do(t, nil, req); resp.StatusCode != 200 || got != digest(body) {
			t.Errorf("request %d: %d %q, want 200 %q", i, resp.StatusCode, got, digest(body))
		}
	}
}

// TestBufferingConcurrentRace runs buffered requests of mixed sizes at once
// (for -race): every answer matches its body, and the buffers end empty.
func TestBufferingConcurrentRace(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	dir := t.TempDir()
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: dir, Memory: 512 << 10, RequestMemory: 128 << 10}, testListener(), false)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			body := randomBytes(1 + i*37<<10)
			req := newReq(t, "PUT", fe.URL+"/")
			req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			if i%2 == 1 {
				req.ContentLength = -1
			}
			resp, err := fe.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != digest(body) {
				t.Errorf("body %d: %q, want %q", i, b, digest(body))
			}
		})
	}
	wg.Wait()
	released(t, rt, dir)
}

func TestIsGRPC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"application/grpc", true},
		{"application/grpc+proto", true},
		{"Application/GRPC; charset=x", true},
		{"application/grpc-web", false},
		{"application/json", false},
		{"", false},
	} {
		if got := isGRPC(httpmsg.Header{{Name: "Content-Type", Value: tc.ct}}); got != tc.want {
			t.Errorf("isGRPC(%q) = %v, want %v", tc.ct, got, tc.want)
		}
	}
}

// TestBufferingSlowUploaderHTTP2: over HTTP/2 a stream whose body stops
// gets 408 once body_timeout passes, and never reaches the upstream.
func TestBufferingSlowUploaderHTTP2(t *testing.T) {
	t.Parallel()
	up := newSinkUpstream(t)
	l := testListener()
	l.BodyTimeout = 300 * time.Millisecond
	rt, fe := bufferedProxy(t, up, conf.Buffers{Dir: t.TempDir()}, l, true)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	req, _ := http.NewRequest("POST", fe.URL+"/up", pr)
	req.ContentLength = 1000
	go pw.Write([]byte("0123")) // then nothing more
	start := time.Now()
	resp, err := fe.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.ProtoMajor != 2 {
		t.Errorf("answer %d over %s, want 408 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	if d := time.Since(start); d < l.BodyTimeout {
		t.Errorf("answered after %v, before body_timeout %v", d, l.BodyTimeout)
	}
	if n := up.conns.Load(); n != 0 {
		t.Errorf("the upstream accepted %d connections, want 0", n)
	}
	released(t, rt, rt.bufs.Limits().Dir)
}
