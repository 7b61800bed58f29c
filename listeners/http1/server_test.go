package http1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// h2cConfig serves HTTP/2 with x/net/http2, answering with the protocol
// and path.
func h2cConfig() Config {
	h2 := &http2.Server{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto+" "+r.URL.Path)
	})
	return Config{H2C: func(c net.Conn) { h2.ServeConn(c, &http2.ServeConnOpts{Handler: h}) }}
}

func TestH2CPriorKnowledge(t *testing.T) {
	t.Parallel()
	ts := start(t, h2cConfig(), okHandler())
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: ioTimeout}
	for _, p := range []string{"/h2", "/again"} {
		res, err := cl.Get("http://" + ts.addr() + p)
		if err != nil {
			t.Fatal(err)
		}
		if got := bodyOf(res); got != "HTTP/2.0 "+p {
			t.Fatalf("got %q", got)
		}
	}
	// HTTP/1 still works on the same port.
	out, _ := roundTrip(t, ts, "GET /h1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if res := readResponses(t, out); len(res) != 1 || bodyOf(res[0]) != "HTTP/1.1 /h1" {
		t.Fatalf("HTTP/1: %q", out)
	}
}

// TestPartialPreface checks that a preface split over several reads is
// waited for and handed to HTTP/2 whole (h2spec 3.5/2 on a shared port).
func TestPartialPreface(t *testing.T) {
	t.Parallel()
	ts := start(t, h2cConfig(), okHandler())
	c := dial(t, ts)
	io.WriteString(c, http2.ClientPreface[:10])
	// The partial preface is read and held while the connection parks.
	testutil.WaitFor(t, "the partial preface being read", func() bool { return ts.e.Stats().Held == 1 })
	io.WriteString(c, http2.ClientPreface[10:])
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*http2.SettingsFrame); !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
}

// TestInvalidPrefaceClosed checks h2spec 3.5/2 on a port shared with
// HTTP/1: bytes that are neither an HTTP/1 request line nor the HTTP/2
// preface end the connection without an HTTP/1 answer (RFC 9113 §3.4),
// while a malformed HTTP/1 request still gets its 400.
func TestInvalidPrefaceClosed(t *testing.T) {
	t.Parallel()
	ts := start(t, h2cConfig(), okHandler())
	tests := []struct {
		desc, raw, want string
	}{
		{desc: "not a request line", raw: "INVALID CONNECTION PREFACE\r\n\r\n", want: ""},
		{desc: "preface with a wrong byte", raw: "PRI * HTTP/2.0\r\n\r\nSM\r\n\rQ", want: ""},
		{desc: "malformed HTTP/1", raw: "GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n", want: "HTTP/1.1 400 "},
		{desc: "HTTP/2.0 request line", raw: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", want: "HTTP/1.1 505 "},
		{desc: "target too long", raw: "GET /" + strings.Repeat("a", 40<<10) + " HTTP/1.1\r\nHost: a\r\n\r\n", want: "HTTP/1.1 414 "},
		{desc: "unclosed IPv6 host", raw: "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", want: "HTTP/1.1 400 "},
	}
	for _, tc := range tests {
		out, closed := roundTrip(t, ts, tc.raw)
		if !closed || !strings.HasPrefix(out, tc.want) || (tc.want == "" && out != "") {
			t.Errorf("%s: closed=%v %q, want %q", tc.desc, closed, out, tc.want)
		}
	}
}

func TestPrefaceWithoutH2C(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, okHandler())
	out, closed := roundTrip(t, ts, http2.ClientPreface)
	if !closed || !strings.HasPrefix(out, "HTTP/1.1 400 ") {
		t.Fatalf("closed=%v %q", closed, out)
	}
}

// TestWriteTimeout checks that a client that stops reading a response is
// cut off after WriteTimeout instead of holding its goroutine forever.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	done := make(chan error, 1)
	ts := start(t, Config{WriteTimeout: timeout}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		const size = 64 << 20 // far more than the socket buffers hold
		w.WriteHead(http.StatusOK, nil, size)
		chunk := make([]byte, 64<<10)
		var err error
		for n := 0; n < size && err == nil; n += len(chunk) {
			_, err = w.Write(chunk)
		}
		done <- err
	}))
	c := dial(t, ts)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n") // and never read
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("64 MiB written to a client that reads nothing")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the handler's writes never failed")
	}
}

func TestHeaderTooLarge(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{MaxHeaderBytes: 1 << 10}, okHandler())
	raw := "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 16<<10) + "\r\n\r\n"
	out, closed := roundTrip(t, ts, raw)
	res := readResponses(t, out)
	if !closed || len(res) != 1 || res[0].StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("closed=%v %q", closed, out)
	}
}

func TestLargeHeadAccepted(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, okHandler())
	big := "X-Big: " + strings.Repeat("b", 20<<10) + "\r\n"
	out, closed := roundTrip(t, ts, "GET /a HTTP/1.1\r\nHost: a\r\n"+big+"\r\nGET /b HTTP/1.1\r\nHost: a\r\n"+big+"Connection: close\r\n\r\n")
	res := readResponses(t, out)
	if !closed || len(res) != 2 || bodyOf(res[0]) != "HTTP/1.1 /a" || bodyOf(res[1]) != "HTTP/1.1 /b" {
		t.Fatalf("closed=%v %q", closed, out)
	}
}

func TestReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{ReadHeaderTimeout: 200 * time.Millisecond}, okHandler())
	c := dial(t, ts)
	begin := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n") // and never the end
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d, %v; want EOF", n, err)
	}
	if d := time.Since(begin); d < 150*time.Millisecond {
		t.Fatalf("closed after %v", d)
	}
}

func TestResponseFraming(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 8<<10) // 128 KiB: past the write buffer
	ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		switch r.Path() {
		case "/stream":
			w.WriteHead(http.StatusOK, nil, -1)
			io.WriteString(w, "ab")
			w.Flush()
			io.WriteString(w, big)
			io.WriteString(w, "cd")
			w.WriteTrailer(httpmsg.Header{{Name: "X-T", Value: "v"}})
		case "/big":
			reply(w, http.StatusOK, big)
		case "/none":
			w.WriteHead(http.StatusNoContent, nil, 0)
		default:
			reply(w, http.StatusOK, "hello")
		}
	}))
	tests := []struct {
		desc, raw          string
		head, close, chunk bool
		want               string
	}{
		{desc: "chunked for unknown length", raw: "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n", chunk: true, want: "ab" + big + "cd"},
		{desc: "large body", raw: "GET /big HTTP/1.1\r\nHost: a\r\n\r\n", want: big},
		{desc: "close-delimited on http/1.0", raw: "GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", close: true, want: "ab" + big + "cd"},
		{desc: "head", raw: "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", head: true},
		{desc: "204", raw: "GET /none HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "connection close", raw: "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", close: true, want: "hello"},
		{desc: "http/1.0 without keep-alive", raw: "GET / HTTP/1.0\r\n\r\n", close: true, want: "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			c := dial(t, ts)
			io.WriteString(c, tt.raw)
			br := bufio.NewReader(c)
			req := &http.Request{Method: http.MethodGet}
			if tt.head {
				req.Method = http.MethodHead
			}
			res, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatal(err)
			}
			got := bodyOf(res)
			chunked := len(res.TransferEncoding) > 0
			if got != tt.want || res.Close != tt.close || chunked != tt.chunk || res.Header.Get("Date") == "" {
				t.Fatalf("body %d bytes, close=%v chunked=%v, header %v", len(got), res.Close, chunked, res.Header)
			}
			if tt.chunk && res.Trailer.Get("X-T") != "v" {
				t.Fatalf("trailer %v", res.Trailer)
			}
			if tt.head && res.ContentLength != 5 {
				t.Fatalf("HEAD Content-Length %d", res.ContentLength)
			}
			if tt.close {
				return
			}
			// The connection persists.
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			if res, err := http.ReadResponse(br, nil); err != nil || bodyOf(res) != "hello" {
				t.Fatalf("next request: %v", err)
			}
		})
	}
}

func TestExpectContinue(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		if r.Path() == "/refuse" {
			reply(w, http.StatusForbidden, "no")
			return
		}
		b, _ := io.ReadAll(r.Body)
		reply(w, http.StatusOK, string(b))
	}))
	c := dial(t, ts)
	br := bufio.NewReader(c)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v", line, err)
	}
	if rest, _ := br.ReadString('\n'); rest != "\r\n" {
		t.Fatalf("100 Continue followed by %q", rest)
	}
	io.WriteString(c, "hello")
	if res, err := http.ReadResponse(br, nil); err != nil || bodyOf(res) != "hello" || res.Close {
		t.Fatalf("response %v, %v", res, err)
	}
	// Refused without reading: no 100 Continue, and the connection
	// closes, since the client may or may not send the body.
	io.WriteString(c, "POST /refuse HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusForbidden || !res.Close {
		t.Fatalf("response %v, %v", res, err)
	}
}

func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		if r.Path() == "/panic" {
			panic("boom")
		}
		reply(w, http.StatusOK, "ok")
	}))
	out, closed := roundTrip(t, ts, "GET /panic HTTP/1.1\r\nHost: a\r\n\r\n")
	if !closed || out != "" {
		t.Fatalf("closed=%v %q", closed, out)
	}
	out, _ = roundTrip(t, ts, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if res := readResponses(t, out); len(res) != 1 || bodyOf(res[0]) != "ok" {
		t.Fatalf("after a panic: %q", out)
	}
}

func TestKeepAliveParks(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, okHandler())
	c := dial(t, ts)
	br := bufio.NewReader(c)
	for _, p := range []string{"/1", "/2"} {
		io.WriteString(c, "GET "+p+" HTTP/1.1\r\nHost: a\r\n\r\n")
		res, err := http.ReadResponse(br, nil)
		if err != nil || bodyOf(res) != "HTTP/1.1 "+p {
			t.Fatalf("%s: %v", p, err)
		}
		testutil.WaitFor(t, "the connection parked", func() bool {
			st := ts.e.Stats()
			return st.Parked == 1 && st.Active == 0
		})
	}
}

func TestShutdownGraceful(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	ts, served := startBare(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		close(entered)
		<-release
		reply(w, http.StatusOK, "done")
	}))
	c := dial(t, ts)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- ts.e.Shutdown(context.Background()) }()
	testutil.WaitFor(t, "shutdown begun", ts.e.Shutting)
	close(release)
	out, _ := io.ReadAll(c)
	if res := readResponses(t, string(out)); len(res) != 1 || bodyOf(res[0]) != "done" || !res[0].Close {
		t.Fatalf("in-flight request: %q", out)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestWriterControls(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		switch r.Path() {
		case "/abort":
			w.WriteHead(http.StatusOK, nil, -1)
			io.WriteString(w, "partial")
			w.Flush()
			w.Abort()
		case "/short":
			w.WriteHead(http.StatusOK, nil, 10)
			io.WriteString(w, "short")
		case "/close":
			w.WriteHead(http.StatusOK, httpmsg.Header{{Name: "Connection", Value: "close"}}, 2)
			io.WriteString(w, "ok")
		case "/slow":
			w.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := io.ReadAll(r.Body); err != nil {
				reply(w, http.StatusRequestTimeout, "slow")
			}
		}
	}))
	tests := []struct {
		desc, raw string
		status    int // 0: the body read must fail
	}{
		{desc: "abort", raw: "GET /abort HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "body shorter than its length", raw: "GET /short HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "connection close from the handler", raw: "GET /close HTTP/1.1\r\nHost: a\r\n\r\n", status: 200},
		{desc: "read deadline", raw: "POST /slow HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nhalf.", status: 408},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			c := dial(t, ts)
			io.WriteString(c, tt.raw)
			br := bufio.NewReader(c)
			res, err := http.ReadResponse(br, nil)
			if err != nil && tt.status == 0 {
				return // reset before the head arrived
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.ReadAll(res.Body)
			if tt.status == 0 {
				if err == nil {
					t.Fatal("truncated body read without error")
				}
				return
			}
			if err != nil || res.StatusCode != tt.status || !res.Close {
				t.Fatalf("%d close=%v, %v", res.StatusCode, res.Close, err)
			}
			if rest, err := io.ReadAll(br); len(rest) != 0 || err != nil {
				t.Fatalf("connection not closed: %q, %v", rest, err)
			}
		})
	}
}

// TestRefusedHook: Config.Refused hears of each refused request with its
// listener, status, reason and the protocol its own request line named
// ("HTTP/1" when that did not parse, never the previous request's).
func TestRefusedHook(t *testing.T) {
	t.Parallel()
	got := make(chan httpmsg.Refusal, 4)
	ts := start(t, Config{Name: "web", Refused: func(r httpmsg.Refusal) { got <- r }}, okHandler())
	for _, tc := range []struct{ raw, proto, reason string }{
		{"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", "HTTP/1.1", "invalid_host"},
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\nGE\x01T / HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1", "invalid_method"},
	} {
		if out, closed := roundTrip(t, ts, tc.raw); !closed || !strings.Contains(out, "HTTP/1.1 400 ") {
			t.Fatalf("%q: closed=%v %q", tc.raw, closed, out)
		}
		select {
		case r := <-got:
			if r.Listener != "web" || r.Status != 400 || r.Protocol != tc.proto || r.Reason != tc.reason || !r.Remote.IsValid() {
				t.Errorf("%q: refusal %+v, want protocol %s reason %s", tc.raw, r, tc.proto, tc.reason)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q: Refused not called", tc.raw)
		}
	}
}
