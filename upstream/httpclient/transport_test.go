package httpclient

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// rawUpstream accepts connections, counts them and hands each to fn.
func rawUpstream(t testing.TB, fn func(net.Conn)) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				fn(c)
			}()
		}
	}()
	return ln.Addr().String(), &n
}

// canned answers every request on a connection with resp; it closes the
// connection after one answer when closeAfter is set.
func canned(resp string, closeAfter bool) func(net.Conn) {
	return func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, resp); err != nil || closeAfter {
				return
			}
		}
	}
}

func newTestTransport(t testing.TB, tune func(*conf.Upstream)) *Transport {
	c := conf.Upstream{Name: "u", ConnectTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second,
		IdleTimeout: time.Minute, MaxIdleConns: 4}
	if tune != nil {
		tune(&c)
	}
	tr := NewTransport(c)
	t.Cleanup(tr.Close)
	return tr
}

// get sends method to addr and reads the whole answer.
func get(t testing.TB, tr http.RoundTripper, method, addr string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+"/p?q=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestKeepAliveReuse(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.RequestURI())
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tr := newTestTransport(t, nil)
	addr := srv.Listener.Addr().String()
	for range 10 {
		resp, body, err := get(t, tr, "GET", addr)
		if err != nil || resp.StatusCode != 200 || body != "GET /p?q=1" {
			t.Fatalf("got %v %q %v", resp, body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("server accepted %d connections, want 1", n)
	}
	if n := tr.idleConns(); n != 1 {
		t.Errorf("idle connections = %d, want 1", n)
	}
}

func TestResponseFraming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		method   string
		resp     string
		close    bool // server closes after answering
		body     string
		trailer  string
		wantConn int32 // connections for two requests
	}{
		{desc: "content-length", method: "GET", resp: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", body: "hello", wantConn: 1},
		{desc: "chunked with trailer", method: "GET", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\nX-T: v\r\n\r\n",
			body: "hello", trailer: "v", wantConn: 1},
		{desc: "close-delimited", method: "GET", resp: "HTTP/1.1 200 OK\r\n\r\nhello", close: true, body: "hello", wantConn: 2},
		{desc: "connection close", method: "GET", resp: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi", close: true, body: "hi", wantConn: 2},
		{desc: "head", method: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", body: "", wantConn: 1},
		{desc: "204", method: "GET", resp: "HTTP/1.1 204 No Content\r\n\r\n", body: "", wantConn: 1},
		{desc: "304", method: "GET", resp: "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", body: "", wantConn: 1},
		{desc: "extra bytes after body", method: "GET", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1 200 OK\r\n", body: "hi", wantConn: 2},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			addr, conns := rawUpstream(t, canned(tc.resp, tc.close))
			tr := newTestTransport(t, nil)
			for i := range 2 {
				resp, body, err := get(t, tr, tc.method, addr)
				if err != nil || body != tc.body {
					t.Fatalf("request %d: body %q, error %v; want %q", i, body, err, tc.body)
				}
				if got := resp.Trailer.Get("X-T"); got != tc.trailer {
					t.Errorf("trailer = %q, want %q", got, tc.trailer)
				}
			}
			if n := conns.Load(); n != tc.wantConn {
				t.Errorf("server accepted %d connections, want %d", n, tc.wantConn)
			}
		})
	}
}

func TestInformationalSkipped(t *testing.T) {
	t.Parallel()
	addr, _ := rawUpstream(t, canned("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false))
	tr := newTestTransport(t, nil)
	var got []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		got = append(got, http.StatusText(code)+" "+h.Get("Link"))
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok" {
		t.Errorf("got %d %q", resp.StatusCode, b)
	}
	if strings.Join(got, ",") != "Continue ,Early Hints </a.css>" {
		t.Errorf("1xx seen = %q", got)
	}
}

func TestSwitchingProtocols(t *testing.T) {
	t.Parallel()
	addr, _ := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		// "early" arrives with the head: it must not be lost in a buffer.
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nearly")
		io.Copy(c, br)
	})
	tr := newTestTransport(t, nil)
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	rw, ok := resp.Body.(io.ReadWriteCloser)
	if resp.StatusCode != 101 || !ok {
		t.Fatalf("got %d, body %T, want 101 with an io.ReadWriteCloser", resp.StatusCode, resp.Body)
	}
	defer rw.Close()
	io.WriteString(rw, "ping")
	b := make([]byte, 9)
	if _, err := io.ReadFull(rw, b); err != nil || string(b) != "earlyping" {
		t.Errorf("tunnel read %q, %v; want earlyping", b, err)
	}
}

func TestEarlyResponseWhileSending(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	}))
	defer srv.Close()
	tr := newTestTransport(t, nil)
	pr, pw := io.Pipe()
	defer pw.Close()
	go io.WriteString(pw, "first bytes of an upload that never ends")
	req, _ := http.NewRequest("POST", srv.URL+"/", pr)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", resp.StatusCode)
	}
}

func TestRequestBodyAndTrailers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(b)+" "+r.Trailer.Get("X-Sum")+" "+strings.Join(r.TransferEncoding, ","))
	}))
	defer srv.Close()
	tr := newTestTransport(t, nil)
	tests := []struct {
		desc   string
		length int64
		want   string
	}{
		{desc: "content-length", length: 5, want: "PUT hello  "},
		{desc: "chunked with trailer", length: -1, want: "PUT hello 42 chunked"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			req, _ := http.NewRequest("PUT", srv.URL+"/", io.NopCloser(strings.NewReader("hello")))
			req.ContentLength = tc.length
			if tc.length < 0 {
				req.Trailer = http.Header{"X-Sum": nil}
				req.Body = &trailerSetter{r: strings.NewReader("hello"), tr: req.Trailer}
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != tc.want {
				t.Errorf("server saw %q, want %q", b, tc.want)
			}
		})
	}
}

// trailerSetter fills the trailer at EOF, as a server's request body does.
type trailerSetter struct {
	r  io.Reader
	tr http.Header
}

func (s *trailerSetter) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == io.EOF {
		s.tr.Set("X-Sum", "42")
	}
	return n, err
}

func (s *trailerSetter) Close() error { return nil }

// TestBodylessResponseHeaderOwned: a response without a body (204, 304,
// HEAD, Content-Length: 0) gives its connection back to the pool as Do
// returns, so its header must not view the connection's read buffer: the
// next exchange on that connection reads into it. The first answer's
// fields must survive the second exchange.
func TestBodylessResponseHeaderOwned(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	addr, conns := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			i := n.Add(1)
			fmt.Fprintf(c, "HTTP/1.1 204 No Content\r\nX-Answer: answer-%d-%s\r\n\r\n", i, strings.Repeat("x", int(i)*7))
		}
	})
	tr := newTestTransport(t, nil)
	do := func() Response {
		var resp Response
		if err := tr.Do(addr, &Request{Method: "GET", Target: "/", Host: "u.test"}, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := do()
	want := first.Header.Get("X-Answer")
	for range 5 {
		do()
	}
	if got := first.Header.Get("X-Answer"); got != want || want != "answer-1-xxxxxxx" {
		t.Errorf("the first 204's X-Answer read %q after later exchanges, want %q (answer-1-xxxxxxx)", got, want)
	}
	if c := conns.Load(); c != 1 {
		t.Errorf("%d connections, want the one reused", c)
	}
}
