package h2conn

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// echo answers with the request's body, the request's trailer x-sum as
// the response trailer x-sum, and what it saw of the head in x-* fields.
func echo() handlerFunc {
	return func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		var body []byte
		if r.Body != nil {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				w.WriteHead(400, nil, 0)
				return
			}
		}
		h := httpmsg.Header{{Name: "X-Method", Value: r.Method}, {Name: "X-Target", Value: r.Target},
			{Name: "X-Host", Value: r.Host}, {Name: "X-Cookie", Value: r.Header.Get("cookie")}}
		w.WriteHead(200, h, -1)
		w.Write(body)
		if r.Trailer != nil {
			w.WriteTrailer(httpmsg.Header{{Name: "X-Sum", Value: r.Trailer().Get("x-sum")}})
		}
	}
}

// TestRoundTrips sends requests with x/net's client: a GET, a POST whose
// 3 MiB body and 5 MiB answer need many window updates each way, and a
// body with trailers; each comes back whole.
func TestRoundTrips(t *testing.T) {
	ts := startServer(t, Config{Handler: echo()})
	cl := ts.client(t)
	tests := []struct {
		desc, method string
		body         []byte
		trailer      string
	}{
		{desc: "GET", method: "GET"},
		{desc: "3 MiB POST", method: "POST", body: bytes.Repeat([]byte("abcdefgh"), 3<<17)},
		{desc: "trailers", method: "POST", body: []byte("hello"), trailer: "42"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			var rd io.Reader
			if tc.body != nil {
				rd = bytes.NewReader(tc.body)
			}
			req, _ := http.NewRequest(tc.method, "http://example.com/p?q=1", rd)
			req.Header.Add("Cookie", "a=1")
			req.Header.Add("Cookie", "b=2")
			if tc.trailer != "" {
				req.ContentLength = -1
				req.Trailer = http.Header{"X-Sum": {tc.trailer}}
			}
			res, err := cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("body: %d bytes, %v; want %d bytes", len(got), err, len(tc.body))
			}
			for k, want := range map[string]string{"X-Method": tc.method, "X-Target": "/p?q=1", "X-Host": "example.com", "X-Cookie": "a=1; b=2"} {
				if v := res.Header.Get(k); v != want {
					t.Errorf("%s: %q, want %q", k, v, want)
				}
			}
			if tc.trailer != "" && res.Trailer.Get("X-Sum") != tc.trailer {
				t.Errorf("trailer X-Sum %q, want %q", res.Trailer.Get("X-Sum"), tc.trailer)
			}
		})
	}
}

// TestResponseHeldToWindow: a handler writing a large body to a client
// that opens no window has its writes held at the window (bounded
// memory, the upstream read only as fast as the client takes it); one
// WINDOW_UPDATE lets exactly that much more through.
func TestResponseHeldToWindow(t *testing.T) {
	var written atomic.Int64
	ts := startServer(t, Config{Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		w.WriteHead(200, nil, -1)
		chunk := make([]byte, 4096)
		for i := 0; i < 1<<10; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
		}
	})})
	const window = 20000
	rc := dialRaw(t, ts.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: window})
	rc.get(1, "/", true)
	got := 0
	for got < window {
		switch f := rc.next().(type) {
		case *http2.DataFrame:
			got += len(f.Data())
		case nil, *http2.RSTStreamFrame, *http2.GoAwayFrame:
			t.Fatalf("stream ended after %d bytes: %v", got, f)
		}
	}
	if got != window {
		t.Errorf("received %d bytes, want the window's %d", got, window)
	}
	// Each Write is copied once it fits: the handler is at most the
	// window plus one gathered chunk and one write ahead.
	if w := written.Load(); w > window+bodyChunk+4096 {
		t.Errorf("the handler wrote %d bytes against a window of %d", w, window)
	}
	rc.write(func() error { return rc.fr.WriteWindowUpdate(1, 5000) })
	for got < window+5000 {
		if f, ok := rc.next().(*http2.DataFrame); ok {
			got += len(f.Data())
		}
	}
	if got != window+5000 {
		t.Errorf("received %d bytes after a 5000-byte update, want %d", got, window+5000)
	}
}

// TestShutdownGraceful: Shutdown sends GOAWAY (NO_ERROR) at once, lets
// the stream in flight finish, then closes the connection; Shutdown
// returns once it has.
func TestShutdownGraceful(t *testing.T) {
	release := make(chan struct{})
	ts := startServer(t, Config{Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		<-release
		w.WriteHead(200, nil, 4)
		w.Write([]byte("done"))
	})})
	rc := dialRaw(t, ts.addr)
	rc.get(1, "/", true)
	testutil.Eventually(t, testTimeout, func() bool {
		ts.srv.mu.Lock()
		defer ts.srv.mu.Unlock()
		for c := range ts.srv.conns {
			c.mu.Lock()
			n := c.handlers
			c.mu.Unlock()
			return n == 1
		}
		return false
	}, "the request did not reach its handler")
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(context.Background()) }()
	ga, ok := rc.next().(*http2.GoAwayFrame)
	if !ok || ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Fatalf("got %v, want GOAWAY NO_ERROR last stream 1", ga)
	}
	close(release)
	var body []byte
	for ended := false; !ended; {
		switch f := rc.next().(type) {
		case *http2.MetaHeadersFrame:
			ended = f.StreamEnded()
		case *http2.DataFrame:
			body = append(body, f.Data()...)
			ended = f.StreamEnded()
		default:
			t.Fatalf("got %v before the end of stream 1", f)
		}
	}
	if string(body) != "done" {
		t.Errorf("body %q, want done", body)
	}
	if f := rc.next(); f != nil {
		t.Errorf("got %v, want the connection closed", f)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Shutdown did not return")
	}
}

// TestIdleTimeout: a connection with no stream open for IdleTimeout gets
// GOAWAY (NO_ERROR) and is closed; one with a stream open is not.
func TestIdleTimeout(t *testing.T) {
	ts := startServer(t, Config{Handler: echo(), IdleTimeout: 200 * time.Millisecond})
	rc := dialRaw(t, ts.addr)
	rc.get(1, "/", true)
	var ga *http2.GoAwayFrame
	for ga == nil {
		switch f := rc.next().(type) {
		case *http2.GoAwayFrame:
			ga = f
		case nil:
			t.Fatal("closed without GOAWAY")
		}
	}
	if ga.ErrCode != http2.ErrCodeNo || ga.LastStreamID != 1 {
		t.Errorf("GOAWAY %v last %d, want NO_ERROR last 1", ga.ErrCode, ga.LastStreamID)
	}
	if f := rc.next(); f != nil {
		t.Errorf("got %v after GOAWAY, want the connection closed", f)
	}
}

// TestClientMistakesReported: a malformed request is reset, a bad
// :authority answered 400 and an oversized header list 431, each
// reported with its reason, and the handler sees none of them.
func TestClientMistakesReported(t *testing.T) {
	var served atomic.Int32
	ts := startServer(t, Config{MaxHeaderBytes: 1024, Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		served.Add(1)
		w.WriteHead(204, nil, 0)
	})})
	rc := dialRaw(t, ts.addr)
	rc.get(1, "/", true, "x-a", "1", "connection", "close")
	rc.get(3, "/", true, "host", "other.example")
	rc.get(5, "/", true, "x-big", strings.Repeat("b", 2000))
	rc.get(7, "/", true)
	answers := map[uint32]string{}
	for len(answers) < 4 {
		switch f := rc.next().(type) {
		case *http2.RSTStreamFrame:
			answers[f.StreamID] = "reset " + f.ErrCode.String()
		case *http2.MetaHeadersFrame:
			answers[f.StreamID] = f.PseudoValue("status")
		case nil, *http2.GoAwayFrame:
			t.Fatalf("connection ended; answers so far %v", answers)
		}
	}
	want := map[uint32]string{1: "reset PROTOCOL_ERROR", 3: "400", 5: "431", 7: "204"}
	for id, w := range want {
		if answers[id] != w {
			t.Errorf("stream %d: %q, want %q", id, answers[id], w)
		}
	}
	if n := served.Load(); n != 1 {
		t.Errorf("handler served %d requests, want 1", n)
	}
	var reasons []string
	for _, r := range ts.refusals() {
		reasons = append(reasons, r.Reason)
	}
	if got := strings.Join(reasons, ","); got != "connection_specific_header,invalid_host,request_head_too_large" {
		t.Errorf("refusals %s", got)
	}
}
