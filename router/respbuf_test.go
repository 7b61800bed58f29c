package router

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// respbufFront is a router with response buffering (the default) in front
// of h, buffers in a dir of their own.
func respbufFront(t *testing.T, h http.Handler) (*Router, *httptest.Server) {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	cfg := &conf.Config{Listeners: []conf.Listener{testListener()}, Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:  []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
		Buffers: conf.Buffers{Dir: t.TempDir(), Memory: 1 << 20, ResponseMemory: 256 << 10}}
	return front(t, cfg, Options{})
}

// TestResponseBufferingTrailers: a long chunked answer, read ahead by the
// second goroutine, still ends with its trailers.
func TestResponseBufferingTrailers(t *testing.T) {
	t.Parallel()
	body := randomBytes(3 << 20)
	rt, fe := respbufFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		for i := 0; i < len(body); i += 64 << 10 {
			w.Write(body[i : i+64<<10])
			w.(http.Flusher).Flush()
		}
		w.Header().Set("X-Sum", "ok")
	}))
	resp, got := do(t, nil, mustRequest(t, "GET", fe.URL+"/"))
	if got != string(body) || resp.Trailer.Get("X-Sum") != "ok" {
		t.Fatalf("got %d bytes, trailer %q; want the %d sent and X-Sum: ok", len(got), resp.Trailer.Get("X-Sum"), len(body))
	}
	released(t, rt, rt.bufs.Limits().Dir)
	if s := rt.BufferStats().Response; s.Memory != 0 || s.Disk != 0 {
		t.Errorf("response buffers hold %+v after the answer", s)
	}
}

// TestResponseBufferingClientGone: a client that goes away while edgeway
// holds most of a large answer frees the buffers and its temporary file.
func TestResponseBufferingClientGone(t *testing.T) {
	t.Parallel()
	body := randomBytes(8 << 20)
	rt, fe := respbufFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Write(body)
	}))
	c, err := net.Dial("tcp", fe.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("head: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return rt.BufferStats().Response.Disk > 0 },
		"the answer never went on in a file while the client read nothing")
	c.Close()
	testutil.Eventually(t, 30*time.Second, func() bool {
		s := rt.BufferStats().Response
		return s.Memory == 0 && s.Disk == 0
	}, "buffers still hold %+v after the client left", rt.BufferStats().Response)
	released(t, rt, rt.bufs.Limits().Dir)
}

// mustRequest is a bodyless request.
func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
