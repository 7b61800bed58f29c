package h3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// testEnv is a server on 127.0.0.1 with a certificate for "localhost"
// from ca, and quic-go's HTTP/3 client trusting it.
type testEnv struct {
	s  *Server
	ca *testutil.CA
	tr *http3.Transport
}

func (e *testEnv) url(path string) string { return "https://" + e.s.Addr().String() + path }

// clientTLS is a client config that trusts the test CA.
func (e *testEnv) clientTLS() *tls.Config {
	return &tls.Config{RootCAs: e.ca.Pool, ServerName: "localhost"}
}

// testServer starts a server serving h with options changed by mod.
func testServer(t testing.TB, h http.Handler, mod func(*Options)) *testEnv {
	t.Helper()
	ca := testutil.NewCA(t, "h3 test CA")
	cert := ca.TLSCert(t, testutil.IssueOptions{}, "localhost")
	o := Options{Addr: "127.0.0.1:0", Handler: h, TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}
	if mod != nil {
		mod(&o)
	}
	s, err := Listen(o)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve() }()
	t.Cleanup(func() {
		s.Close()
		if err := <-errc; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	e := &testEnv{s: s, ca: ca}
	e.tr = &http3.Transport{TLSClientConfig: e.clientTLS()}
	t.Cleanup(func() { e.tr.Close() })
	return e
}

// do sends a request over tr and returns the response with its body read.
func do(t testing.TB, tr http.RoundTripper, req *http.Request) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
	defer cancel()
	res, err := tr.RoundTrip(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return res, string(b)
}

func TestServeRequests(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Trailer", "X-Sum")
		w.Header().Set("X-Proto", fmt.Sprintf("%s %d tls=%v", r.Proto, r.ProtoMajor, r.TLS != nil))
		w.Header().Set("X-Remote", r.RemoteAddr)
		w.Header().Set("X-Local", fmt.Sprint(r.Context().Value(http.LocalAddrContextKey)))
		fmt.Fprintf(w, "%s %s host=%s cl=%d nobody=%v body=%q x=%s early=%q",
			r.Method, r.RequestURI, r.Host, r.ContentLength, r.Body == http.NoBody, b, r.Header.Get("X-Test"), r.Header.Get("Early-Data"))
		w.Header().Set("X-Sum", "42")
	}), nil)
	host := e.s.Addr().String()
	big := strings.Repeat("x", 100000)
	for _, tc := range []struct {
		desc, method, path, want string
		body                     io.Reader
	}{
		{desc: "GET", method: "GET", path: "/a?b=c",
			want: `GET /a?b=c host=` + host + ` cl=0 nobody=true body="" x=1 early=""`},
		{desc: "POST with body", method: "POST", path: "/p", body: strings.NewReader("hello"),
			want: `POST /p host=` + host + ` cl=5 nobody=false body="hello" x=1 early=""`},
		{desc: "POST without Content-Length", method: "POST", path: "/stream", body: io.MultiReader(strings.NewReader("hel"), strings.NewReader("lo")),
			want: `POST /stream host=` + host + ` cl=-1 nobody=false body="hello" x=1 early=""`},
		{desc: "large body", method: "PUT", path: "/big", body: strings.NewReader(big),
			want: `PUT /big host=` + host + ` cl=100000 nobody=false body="` + big + `" x=1 early=""`},
		{desc: "DELETE", method: "DELETE", path: "/d",
			want: `DELETE /d host=` + host + ` cl=0 nobody=true body="" x=1 early=""`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, e.url(tc.path), tc.body)
			req.Header.Set("X-Test", "1")
			res, body := do(t, e.tr, req)
			if body != tc.want {
				t.Errorf("body = %.200q, want %.200q", body, tc.want)
			}
			if got := res.Header.Get("X-Proto"); got != "HTTP/3.0 3 tls=true" {
				t.Errorf("X-Proto = %q", got)
			}
			if got := res.Header.Get("X-Remote"); !strings.HasPrefix(got, "127.0.0.1:") {
				t.Errorf("X-Remote = %q", got)
			}
			if got := res.Header.Get("X-Local"); got != host {
				t.Errorf("local address = %q, want %s", got, host)
			}
			if got := res.Trailer.Get("X-Sum"); got != "42" {
				t.Errorf("trailer X-Sum = %q", got)
			}
		})
	}
	if st := e.s.Stats(); st.Requests != 5 || st.HandshakesOK != 1 || st.Active != 1 || st.Accepted != 1 {
		t.Errorf("stats = %+v, want 5 requests over 1 connection", st)
	}
}

func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served")
	}), func(o *Options) { o.MaxHeaderBytes = 1024 })
	for _, tc := range []struct {
		desc   string
		size   int
		status int
	}{
		{desc: "under the limit", size: 500, status: 200},
		{desc: "over the limit", size: 3000, status: 431},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.url("/"), nil)
			req.Header.Set("X-Big", strings.Repeat("0123456789abcdef", tc.size/16))
			if res, _ := do(t, e.tr, req); res.StatusCode != tc.status {
				t.Errorf("status = %d, want %d", res.StatusCode, tc.status)
			}
		})
	}
}

// dial opens a QUIC connection to e's server from a new socket.
func (e *testEnv) dial(ctx context.Context) (*quic.Conn, error) {
	tc := e.clientTLS()
	tc.NextProtos = []string{http3.NextProtoH3}
	return quic.DialAddr(ctx, e.s.Addr().String(), tc, nil)
}

func TestMaxConnsPerSource(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.NotFoundHandler(), func(o *Options) { o.MaxConnsPerSource = 2 })
	ok := 0
	var lastErr error
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := e.dial(ctx)
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		ok++
		defer c.CloseWithError(0, "")
	}
	var te *quic.TransportError
	if ok != 2 || !errors.As(lastErr, &te) || te.ErrorCode != quic.ConnectionRefused {
		t.Fatalf("%d of 3 connections from one address made it (last error %v), want 2 and CONNECTION_REFUSED", ok, lastErr)
	}
	// The refused client may send its Initial more than once.
	if st := e.s.Stats(); st.RefusedSource < 1 {
		t.Errorf("RefusedSource = %d, want at least 1", st.RefusedSource)
	}
}

// TestShutdownGraceful: a request in flight at Shutdown finishes; a new
// connection is not served; Shutdown returns once the client closed the
// connection after GOAWAY.
func TestShutdownGraceful(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "done "+r.URL.Path)
	}), nil)
	if _, body := do(t, e.tr, mustRequest("GET", e.url("/warm"))); body != "done /warm" {
		t.Fatalf("body %q", body)
	}
	var wg sync.WaitGroup
	var slowBody string
	var slowErr error
	wg.Go(func() {
		res, err := e.tr.RoundTrip(mustRequest("GET", e.url("/slow")))
		if err != nil {
			slowErr = err
			return
		}
		b, err := io.ReadAll(res.Body)
		slowBody, slowErr = string(b), err
	})
	<-started
	shut := make(chan error, 1)
	go func() { shut <- e.s.Shutdown(context.Background()) }()
	testutil.Eventually(t, 5*time.Second, e.s.closing.Load, "shutdown did not start")
	// A new request on the same connection is refused: GOAWAY reached
	// the client (quic-go's client then opens no new stream on it).
	testutil.Eventually(t, 5*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := e.tr.RoundTripOpt(mustRequest("GET", e.url("/late")).WithContext(ctx), http3.RoundTripOpt{OnlyCachedConn: true})
		return err != nil
	}, "a request after GOAWAY was served")
	close(release)
	wg.Wait()
	if slowErr != nil || slowBody != "done /slow" {
		t.Fatalf("in-flight request: %q, %v", slowBody, slowErr)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return once the request was done")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if c, err := e.dial(ctx); err == nil {
		c.CloseWithError(0, "")
		t.Error("a new connection was accepted after Shutdown")
	}
}

func mustRequest(method, url string) *http.Request {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		panic(err)
	}
	return req
}

// TestShutdownForced: a request that does not finish within the grace
// gets its connection closed, and Shutdown returns the context's error.
func TestShutdownForced(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}), nil)
	errc := make(chan error, 1)
	go func() {
		res, err := e.tr.RoundTrip(mustRequest("GET", e.url("/hang")))
		if err == nil {
			_, err = io.Copy(io.Discard, res.Body)
		}
		errc <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := e.s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline", err)
	}
	var ae *quic.ApplicationError
	if err := <-errc; !errors.As(err, &ae) || ae.ErrorCode != quic.ApplicationErrorCode(http3.ErrCodeNoError) {
		t.Errorf("client saw %v, want the connection closed with H3_NO_ERROR", err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return e.s.Stats().Active == 0 },
		"connections still counted open: %+v", e.s.Stats())
}

// BenchmarkRequest measures a GET over one connection, client included
// (quic-go's client costs about what its server does).
func BenchmarkRequest(b *testing.B) {
	e := testServer(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello")
	}), nil)
	do(b, e.tr, mustRequest("GET", e.url("/")))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := e.tr.RoundTrip(mustRequest("GET", e.url("/")))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	})
}

// TestLateEndOfStream: HTTP/3 has no end-of-stream flag on HEADERS, so a
// client may end a GET's stream in a later packet than its headers. The
// request still reaches the handler without a body (ContentLength 0, as
// over HTTP/1.1 and HTTP/2, so the proxy sends no chunked body of
// nothing); and a GET whose body does come later keeps it, whole.
func TestLateEndOfStream(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "cl=%d nobody=%v body=%q err=%v", r.ContentLength, r.Body == http.NoBody, b, err)
	}), nil)
	tc := e.clientTLS()
	tc.NextProtos = []string{http3.NextProtoH3}
	for _, tt := range []struct{ desc, body, want string }{
		{desc: "no body", want: `cl=0 nobody=true body="" err=<nil>`},
		{desc: "late body", body: "abc", want: `cl=-1 nobody=false body="abc" err=<nil>`},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := quic.DialAddr(ctx, e.s.Addr().String(), tc, &quic.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			cc := (&http3.Transport{}).NewClientConn(c)
			rs, err := cc.OpenRequestStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := e.s.Stats().Requests
			if err := rs.SendRequestHeader(mustRequest("GET", e.url("/late"))); err != nil {
				t.Fatal(err)
			}
			// The stream ends only once the server holds the request.
			testutil.Eventually(t, 10*time.Second, func() bool { return e.s.Stats().Requests > before },
				"the server did not get the request (stats %+v)", e.s.Stats())
			if tt.body != "" {
				if _, err := rs.Write([]byte(tt.body)); err != nil {
					t.Fatal(err)
				}
			}
			rs.Close()
			res, err := rs.ReadResponse()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if string(b) != tt.want {
				t.Errorf("handler saw %s, want %s", b, tt.want)
			}
		})
	}
}
