package router

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

// resetter reads a request and resets the connection without answering.
func resetter(t testing.TB, n *atomic.Int32) string {
	return rawServer(t, func(c net.Conn) {
		http.ReadRequest(bufio.NewReader(c))
		n.Add(1)
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
}

// status503 answers every request 503.
func status503(t testing.TB, n *atomic.Int32) string {
	s := proxyTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	return s
}

func proxyTarget(t testing.TB, h http.Handler) string {
	s := backend(t, "unused")
	s.Config.Handler = h
	return addr(s)
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		bad    func(testing.TB, *atomic.Int32) string
		method string
		retry  *conf.Retry
		want   int // status of every request
	}{
		{desc: "connect failure retried", bad: func(t testing.TB, _ *atomic.Int32) string { return closedAddr(t) }, method: "GET", want: 200},
		{desc: "connect failure retried for POST", bad: func(t testing.TB, _ *atomic.Int32) string { return closedAddr(t) }, method: "POST", want: 200},
		{desc: "reset retried for GET", bad: resetter, method: "GET", want: 200},
		{desc: "reset not retried for POST", bad: resetter, method: "POST", want: 502},
		{desc: "503 retried when asked", bad: status503, method: "GET", want: 200,
			retry: &conf.Retry{Attempts: 1, Statuses: []int{503}, Budget: 20, MinConcurrent: 3}},
		{desc: "503 passed on by default", bad: status503, method: "GET", want: 503},
		{desc: "retries off", bad: func(t testing.TB, _ *atomic.Int32) string { return closedAddr(t) }, method: "GET", want: 502,
			retry: &conf.Retry{}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var badHits atomic.Int32
			good := backend(t, "good")
			u := testUpstream("u", []string{tc.bad(t, &badHits), addr(good)})
			u.Retry = conf.DefaultRetry()
			if tc.retry != nil {
				u.Retry = *tc.retry
			}
			cfg := &conf.Config{
				Listeners: []conf.Listener{testListener()},
				Upstreams: []conf.Upstream{u},
				Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
			}
			_, fe := front(t, cfg, Options{})
			// Round robin starts with the bad server: every other request
			// meets it first.
			for i := range 4 {
				resp, _ := do(t, nil, newReq(t, tc.method, fe.URL+"/"))
				if i%2 == 0 && resp.StatusCode != tc.want {
					t.Errorf("request %d: status %d, want %d", i, resp.StatusCode, tc.want)
				}
			}
		})
	}
}

func TestMaxRequests(t *testing.T) {
	t.Parallel()
	upAddr, arrived := hangSignal(t)
	u := testUpstream("u", []string{upAddr})
	u.MaxRequests = 1
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{u},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
	}
	_, fe := front(t, cfg, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()                                                              // ends the held request before the servers close
	go http.DefaultClient.Do(newReq(t, "GET", fe.URL+"/hang").WithContext(ctx)) // holds the only place
	<-arrived
	resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/"))
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d over max_requests, want 503", resp.StatusCode)
	}
}

// TestRetryWithBody checks that a small body is kept and sent whole to the
// next server after a connect failure, and that a body over body_buffer is
// not retried, when the body streams; a buffered body (the default) is
// retried whatever its size: the buffer is its replay.
func TestRetryWithBody(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			retryWithBody(t, stream)
		})
	}
}

func retryWithBody(t *testing.T, stream bool) {
	echo := proxyTarget(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	u := testUpstream("u", []string{closedAddr(t), echo})
	u.Retry = conf.DefaultRetry()
	u.Retry.BodyBuffer = 1 << 10
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{u},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
	}
	cfg.Routes[0].StreamRequestBody = stream
	_, fe := front(t, cfg, Options{})
	large := 502 // over body_buffer: not kept, not retried
	if !stream {
		large = 200
	}
	for _, tc := range []struct {
		body    string
		chunked bool
		want    int
	}{
		{body: "small body", want: 200},
		{body: "small chunked body", chunked: true, want: 200},
		{body: strings.Repeat("x", 4<<10), want: large},
		{body: strings.Repeat("y", 3<<20), chunked: true, want: large},
	} {
		// Round robin: the first of every two requests meets the dead
		// server first.
		for i := range 2 {
			req := newReq(t, "POST", fe.URL+"/")
			req.Body = io.NopCloser(strings.NewReader(tc.body))
			req.ContentLength = int64(len(tc.body))
			if tc.chunked {
				req.ContentLength = -1
			}
			resp, got := do(t, nil, req)
			if i == 0 && (resp.StatusCode != tc.want || (tc.want == 200 && got != tc.body)) {
				t.Errorf("body of %d bytes: %d %q, want %d with the body echoed", len(tc.body), resp.StatusCode, got, tc.want)
			}
		}
	}
}
