package httpclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// h2cServer is an HTTP/2 server with prior knowledge (h2c) on loopback
// that counts its connections and records the paths it served.
type h2cServer struct {
	addr  string
	conns atomic.Int32
	mu    sync.Mutex
	seen  []string
}

func newH2CServer(t testing.TB, h http.HandlerFunc) *h2cServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &h2cServer{addr: ln.Addr().String()}
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.Path)
		s.mu.Unlock()
		h(w, r)
	})
	srv := &http.Server{Handler: h2c.NewHandler(record, &http2.Server{}),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				s.conns.Add(1)
			}
		}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *h2cServer) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// echoHandler describes the request in its body and ends with trailers,
// one declared and one not (as gRPC's grpc-status).
func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Trailer", "X-Sum")
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(w, "%s %s %s te=%q ua=%q len=%d body=%q trailer=%q", r.Proto, r.Method, r.RequestURI,
		r.Header.Get("Te"), r.Header.Get("User-Agent"), r.ContentLength, b, r.Trailer.Get("X-Req"))
	w.Header().Set("X-Sum", "42")
	w.Header().Set(http.TrailerPrefix+"Grpc-Status", "7")
}

func h2Transport(t testing.TB, tune func(*conf.Upstream)) *Transport {
	return newTestTransport(t, func(c *conf.Upstream) {
		c.Protocol = "h2c"
		if tune != nil {
			tune(c)
		}
	})
}

func TestH2CRoundTrip(t *testing.T) {
	t.Parallel()
	srv := newH2CServer(t, echoHandler)
	tr := h2Transport(t, nil)
	tests := []struct {
		desc    string
		req     Request
		want    string
		trailer string // the response's grpc-status trailer
	}{
		{desc: "GET with te trailers",
			req: Request{Method: "GET", Target: "/a/b%2Fc?q=1&r", Host: "svc.example",
				Header: httpmsg.Header{{Name: "TE", Value: "trailers"}, {Name: "Connection", Value: "close"}, {Name: "Keep-Alive", Value: "5"}}},
			want: `HTTP/2.0 GET /a/b%2Fc?q=1&r te="trailers" ua="" len=0 body="" trailer=""`, trailer: "7"},
		{desc: "a client TE other than trailers is replaced by trailers",
			req:  Request{Method: "GET", Target: "/?", Host: "svc.example", Header: httpmsg.Header{{Name: "te", Value: "gzip"}, {Name: "User-Agent", Value: "ua/1"}}},
			want: `HTTP/2.0 GET /? te="trailers" ua="ua/1" len=0 body="" trailer=""`, trailer: "7"},
		{desc: "double slash path",
			req:  Request{Method: "GET", Target: "//x//y", Host: "svc.example"},
			want: `HTTP/2.0 GET //x//y te="trailers" ua="" len=0 body="" trailer=""`, trailer: "7"},
		{desc: "body with Content-Length",
			req:  Request{Method: "POST", Target: "/p", Host: "h", ContentLength: 5, Body: strings.NewReader("hello")},
			want: `HTTP/2.0 POST /p te="trailers" ua="" len=5 body="hello" trailer=""`, trailer: "7"},
		{desc: "streamed body with trailer",
			req: Request{Method: "POST", Target: "/p", Host: "h", ContentLength: -1, Body: strings.NewReader("hello"),
				Header:  httpmsg.Header{{Name: "Trailer", Value: "X-Req"}},
				Trailer: func() httpmsg.Header { return httpmsg.Header{{Name: "X-Req", Value: "t1"}} }},
			want: `HTTP/2.0 POST /p te="trailers" ua="" len=-1 body="hello" trailer="t1"`, trailer: "7"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			resp, body, err := doAll(tr, srv.addr, &tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status != 200 || body != tc.want {
				t.Errorf("got %d %q\nwant 200 %q", resp.Status, body, tc.want)
			}
			if got := resp.Trailer.Get("Grpc-Status"); got != tc.trailer || resp.Trailer.Get("X-Sum") != "42" {
				t.Errorf("trailers %v, want Grpc-Status %q and X-Sum 42", resp.Trailer, tc.trailer)
			}
			if resp.ContentLength != -1 && resp.ContentLength != int64(len(body)) {
				t.Errorf("ContentLength %d for a body of %d bytes", resp.ContentLength, len(body))
			}
		})
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections for %d sequential requests, want 1", n, len(tests))
	}
}

func TestH2CNoBodyResponses(t *testing.T) {
	t.Parallel()
	srv := newH2CServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Grpc-Status", "5") // a trailers-only answer
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(204)
		case "/head":
			w.Header().Set("Content-Length", "10")
		}
	})
	tr := h2Transport(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		length       int64
	}{{"GET", "/204", 204, 0}, {"HEAD", "/head", 200, 10}, {"GET", "/empty", 200, 0}} {
		resp, _, err := doAll(tr, srv.addr, &Request{Method: tc.method, Target: tc.path, Host: "h"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != tc.status || resp.ContentLength != tc.length || resp.Body != nil || resp.Header.Get("Grpc-Status") != "5" {
			t.Errorf("%s %s: %d length %d body %v header %v; want %d length %d, no body, Grpc-Status 5",
				tc.method, tc.path, resp.Status, resp.ContentLength, resp.Body != nil, resp.Header, tc.status, tc.length)
		}
	}
}

// The request body keeps flowing while the response streams back: each
// line sent is echoed before the next is written.
func TestH2CFullDuplex(t *testing.T) {
	t.Parallel()
	srv := newH2CServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			io.WriteString(w, "echo "+line)
			w.(http.Flusher).Flush()
		}
	})
	tr := h2Transport(t, nil)
	pr, pw := io.Pipe()
	var resp Response
	if err := tr.Do(srv.addr, &Request{Method: "POST", Target: "/chat", Host: "h", ContentLength: -1, Body: pr}, &resp); err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := range 5 {
		msg := fmt.Sprintf("message %d\n", i)
		if _, err := io.WriteString(pw, msg); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil || got != "echo "+msg {
			t.Fatalf("read %q, %v; want %q", got, err, "echo "+msg)
		}
	}
	pw.Close()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Errorf("after the client's end: %q, %v; want EOF", rest, err)
	}
}

// Concurrent requests share one connection.
func TestH2CMultiplexes(t *testing.T) {
	t.Parallel()
	const n = 20
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	srv := newH2CServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		io.WriteString(w, "ok")
	})
	tr := h2Transport(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, body, err := doAll(tr, srv.addr, &Request{Method: "GET", Target: "/", Host: "h"})
			if err == nil && body != "ok" {
				err = fmt.Errorf("body %q", body)
			}
			errs <- err
		})
	}
	waitTimeout(t, arrived.Wait, 10*time.Second, "all requests in flight at once")
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if c := srv.conns.Load(); c != 1 {
		t.Errorf("%d connections for %d concurrent requests, want 1", c, n)
	}
	// The streams end on the connection's read loop, just after the
	// bodies' EOF: the count settles at 1.
	testutil.Eventually(t, 10*time.Second, func() bool { return tr.idleConns() == 1 }, "idleConns = %d, want 1", tr.idleConns())
}

func waitTimeout(t testing.TB, wait func(), d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Failures carry the kinds the HTTP/1.1 client reports, so that retries,
// outlier ejection and breakers treat both protocols alike; a client's
// mistake is never an *Error.
func TestH2CFailures(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	srv := newH2CServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		case "/reset":
			panic(http.ErrAbortHandler)
		case "/read":
			io.ReadAll(r.Body)
		}
	})
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	tr := h2Transport(t, nil)
	// Only the timeout case gets a short response timeout: under -race on
	// a busy machine a reset or a body error can take longer than 200 ms,
	// and each must be told by its kind, not overtaken by the clock.
	short := h2Transport(t, func(c *conf.Upstream) { c.ResponseTimeout = 200 * time.Millisecond })
	broken := errors.New("client body broke")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		desc  string
		addr  string
		req   Request
		check func(error) bool
		want  string
		short bool // through the transport with the short response timeout
	}{
		{desc: "refused", addr: deadAddr, req: Request{Target: "/"},
			check: func(err error) bool { return IsConnectError(err) }, want: "a KindConnect *Error"},
		{desc: "response timeout", req: Request{Target: "/hang"}, short: true,
			check: func(err error) bool { var ue *Error; return errors.As(err, &ue) && ue.Kind == KindRead && ue.Timeout() },
			want:  "a KindRead *Error that is a timeout"},
		{desc: "stream reset", req: Request{Target: "/reset"},
			check: func(err error) bool {
				var ue *Error
				return errors.As(err, &ue) && ue.Kind == KindRead && !ue.Timeout()
			},
			want: "a KindRead *Error, not a timeout"},
		{desc: "client body broke", req: Request{Method: "POST", Target: "/read", ContentLength: -1, Body: io.MultiReader(strings.NewReader("x"), iotestErr(broken))},
			check: func(err error) bool { var be *BodyError; return errors.As(err, &be) && errors.Is(err, broken) },
			want:  "a *BodyError"},
		{desc: "client body short", req: Request{Method: "POST", Target: "/read", ContentLength: 10, Body: strings.NewReader("x")},
			check: func(err error) bool { var be *BodyError; return errors.As(err, &be) },
			want:  "a *BodyError"},
		{desc: "client gone", req: Request{Target: "/", Ctx: canceled},
			check: func(err error) bool { return errors.Is(err, context.Canceled) }, want: "context.Canceled"},
		{desc: "upgrade", req: Request{Target: "/", Header: httpmsg.Header{{Name: "Connection", Value: "Upgrade"}, {Name: "Upgrade", Value: "websocket"}}},
			check: func(err error) bool { var re *RequestError; return errors.As(err, &re) && re.Status == 502 },
			want:  "a *RequestError with status 502"},
		{desc: "CONNECT", req: Request{Method: "CONNECT", Target: "h:443"},
			check: func(err error) bool { var re *RequestError; return errors.As(err, &re) && re.Status == 502 },
			want:  "a *RequestError with status 502"},
		{desc: "bad target", req: Request{Target: "/a b"},
			check: func(err error) bool { var re *RequestError; return errors.As(err, &re) && re.Status == 400 },
			want:  "a *RequestError with status 400"},
		{desc: "bad host", req: Request{Target: "/", Host: "a b"},
			check: func(err error) bool { var re *RequestError; return errors.As(err, &re) && re.Status == 400 },
			want:  "a *RequestError with status 400"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			addr := tc.addr
			if addr == "" {
				addr = srv.addr
			}
			if tc.req.Host == "" {
				tc.req.Host = "h"
			}
			rt := tr
			if tc.short {
				rt = short
			}
			_, _, err := doAll(rt, addr, &tc.req)
			if !tc.check(err) {
				t.Errorf("error %v (%T), want %s", err, err, tc.want)
			}
		})
	}
	if got := srv.paths(); strings.Contains(strings.Join(got, ","), "/ ") {
		t.Errorf("server saw %q", got)
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func iotestErr(err error) io.Reader { return errReader{err} }

// Cancel (the router's idle watchdog) ends the stream, not the connection
// the other streams share.
func TestH2CCancelerEndsOneStream(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	srv := newH2CServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			started <- struct{}{}
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	})
	tr := h2Transport(t, nil)
	var cx Canceler
	errc := make(chan error, 1)
	go func() {
		_, _, err := doAll(tr, srv.addr, &Request{Target: "/hang", Host: "h", Cancel: &cx})
		errc <- err
	}()
	<-started
	cause := errors.New("idle")
	cx.Cancel(cause)
	err := <-errc
	var ue *Error
	if !errors.As(err, &ue) || cx.Cause() != cause {
		t.Errorf("error %v, cause %v; want an *Error and the cause kept", err, cx.Cause())
	}
	if _, body, err := doAll(tr, srv.addr, &Request{Target: "/", Host: "h"}); err != nil || body != "ok" {
		t.Errorf("next request: %q, %v", body, err)
	}
	if n := srv.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (the cancel must not close the shared connection)", n)
	}
}
