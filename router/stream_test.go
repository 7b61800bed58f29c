package router

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/edgeway/edgeway/conf"
)

const streamSize = 64 << 20

// pattern is an endless deterministic byte stream.
type pattern struct{ off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(p.off*7 + p.off>>11)
		p.off++
	}
	return len(b), nil
}

func sum(r io.Reader, n int64) []byte {
	h := sha256.New()
	io.CopyN(h, r, n)
	return h.Sum(nil)
}

// waitOrFail waits for ch to close; a proxy that buffered a whole body
// would never let it close in time.
func waitOrFail(ch <-chan struct{}, what string) error {
	select {
	case <-ch:
		return nil
	case <-time.After(20 * time.Second):
		return errors.New(what + " never happened: body buffered?")
	}
}

func proxyTo(t testing.TB, h http.Handler, tune ...func(*conf.Upstream)) *httptest.Server {
	t.Helper()
	return proxyToRoute(t, h, false, tune...)
}

// proxyStreaming is proxyTo with `request_buffering off` on the route: the
// request body streams to the upstream as it arrives.
func proxyStreaming(t testing.TB, h http.Handler, tune ...func(*conf.Upstream)) *httptest.Server {
	t.Helper()
	return proxyToRoute(t, h, true, tune...)
}

// streaming is r with `request_buffering off`.
func streaming(r conf.Route) conf.Route {
	r.StreamRequestBody = true
	return r
}

func proxyToRoute(t testing.TB, h http.Handler, stream bool, tune ...func(*conf.Upstream)) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(h)
	t.Cleanup(up.Close)
	u := testUpstream("u", []string{addr(up)})
	for _, f := range tune {
		f(&u)
	}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{u},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
	}
	cfg.Routes[0].StreamRequestBody = stream
	_, fe := front(t, cfg, Options{})
	return fe
}

func TestStreamingUpload(t *testing.T) {
	t.Parallel()
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			fe := proxyStreaming(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var first [1]byte
				if _, err := io.ReadFull(r.Body, first[:]); err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				close(started)
				h := sum(io.MultiReader(bytes.NewReader(first[:]), r.Body), streamSize)
				n, _ := io.Copy(io.Discard, r.Body)
				w.Header().Set("X-Extra", strconv.FormatInt(n, 10))
				w.Write(h)
			}))
			pr, pw := io.Pipe()
			go func() {
				src := &pattern{}
				io.CopyN(pw, src, 1<<20)
				if err := waitOrFail(started, "upstream receiving before the upload ended"); err != nil {
					pw.CloseWithError(err)
					return
				}
				io.CopyN(pw, src, streamSize-1<<20)
				pw.Close()
			}()
			req, _ := http.NewRequest("PUT", fe.URL+"/up", pr)
			if !chunked {
				req.ContentLength = streamSize
			}
			resp, body := do(t, nil, req)
			if resp.StatusCode != 200 || resp.Header.Get("X-Extra") != "0" {
				t.Fatalf("status %d extra %q body %q", resp.StatusCode, resp.Header.Get("X-Extra"), body)
			}
			if want := sum(&pattern{}, streamSize); body != string(want) {
				t.Error("upstream received different bytes")
			}
		})
	}
}

func TestStreamingDownload(t *testing.T) {
	t.Parallel()
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			t.Parallel()
			got := make(chan struct{})
			fe := proxyTo(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !chunked {
					w.Header().Set("Content-Length", strconv.Itoa(streamSize))
				}
				src := &pattern{}
				io.CopyN(w, src, 1<<20)
				http.NewResponseController(w).Flush()
				if waitOrFail(got, "client receiving before the download ended") != nil {
					return
				}
				io.CopyN(w, src, streamSize-1<<20)
			}))
			resp, err := http.Get(fe.URL + "/down")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var first [1]byte
			if _, err := io.ReadFull(resp.Body, first[:]); err != nil {
				t.Fatal(err)
			}
			close(got)
			h := sha256.New()
			h.Write(first[:])
			n, err := io.Copy(h, resp.Body)
			if err != nil || n+1 != streamSize {
				t.Fatalf("read %d bytes, err %v", n+1, err)
			}
			if !bytes.Equal(h.Sum(nil), sum(&pattern{}, streamSize)) {
				t.Error("client received different bytes")
			}
		})
	}
}

func TestTrailers(t *testing.T) {
	t.Parallel()
	fe := proxyTo(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Resp-Trailer")
		io.Copy(w, r.Body)
		w.Header().Set("X-Resp-Trailer", "back:"+r.Trailer.Get("X-Req-Trailer"))
	}))
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", fe.URL+"/", pr)
	req.Trailer = http.Header{"X-Req-Trailer": nil}
	go func() {
		io.WriteString(pw, "hello")
		req.Trailer.Set("X-Req-Trailer", "sent")
		pw.Close()
	}()
	resp, body := do(t, nil, req)
	if body != "hello" {
		t.Errorf("body = %q", body)
	}
	if got := resp.Trailer.Get("X-Resp-Trailer"); got != "back:sent" {
		t.Errorf("response trailer = %q, want back:sent", got)
	}
}

func TestWebSocket(t *testing.T) {
	t.Parallel()
	fe := proxyTo(t, websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	ws, err := websocket.Dial("ws"+fe.URL[len("http"):]+"/ws", "", "http://localhost/")
	if err != nil {
		t.Fatalf("dial through proxy: %v", err)
	}
	defer ws.Close()
	for _, msg := range []string{"hello", "edgeway"} {
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil {
			t.Fatal(err)
		}
		if got != msg {
			t.Errorf("echo = %q, want %q", got, msg)
		}
	}
}

// TestSmallStreamedChunksFlushed checks that a response of unknown length
// (server-sent events, long polling) reaches the client write by write, not
// when a buffer fills.
func TestSmallStreamedChunksFlushed(t *testing.T) {
	t.Parallel()
	got := make(chan struct{})
	fe := proxyTo(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "event: 1\n\n")
		http.NewResponseController(w).Flush()
		if waitOrFail(got, "client receiving the first event") != nil {
			return
		}
		io.WriteString(w, "event: 2\n\n")
	}))
	resp, err := http.Get(fe.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("event: 1\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "event: 1\n\n" {
		t.Fatalf("first event: %q, %v", first, err)
	}
	close(got)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || string(rest) != "event: 2\n\n" {
		t.Fatalf("second event: %q, %v", rest, err)
	}
}

// TestTunnelsAcrossReload checks that a reload leaves a tunnel on a route
// that stays alone, and closes one whose route left after TunnelDrain.
func TestTunnelsAcrossReload(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	t.Cleanup(up.Close)
	cfg := func(routes ...string) *conf.Config {
		c := &conf.Config{
			Listeners:   []conf.Listener{testListener()},
			Upstreams:   []conf.Upstream{testUpstream("u", []string{addr(up)})},
			TunnelDrain: 100 * time.Millisecond,
		}
		for _, r := range routes {
			c.Routes = append(c.Routes, testRoute(t, r, "PathPrefix(`/"+r+"`)", "u"))
		}
		return c
	}
	rt, fe := front(t, cfg("stays", "goes"), Options{})
	dial := func(path string) *websocket.Conn {
		ws, err := websocket.Dial("ws"+fe.URL[len("http"):]+path, "", "http://localhost/")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		return ws
	}
	echo := func(ws *websocket.Conn) error {
		if err := websocket.Message.Send(ws, "ping"); err != nil {
			return err
		}
		var got string
		ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		return websocket.Message.Receive(ws, &got)
	}
	stays, goes := dial("/stays"), dial("/goes")
	if err := rt.Apply(cfg("stays")); err != nil {
		t.Fatal(err)
	}
	// The orphaned tunnel is closed once the drain limit passes.
	ended := make(chan error, 1)
	go func() {
		var got string
		goes.SetReadDeadline(time.Now().Add(10 * time.Second))
		ended <- websocket.Message.Receive(goes, &got)
	}()
	if err := <-ended; err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("tunnel of a removed route: %v, want it closed after the drain limit", err)
	}
	if err := echo(stays); err != nil {
		t.Fatalf("tunnel of a route that stayed: %v", err)
	}
}
