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

	"github.com/edgeway/edgeway/internal/testutil"
)

// testServer starts a server on 127.0.0.1 serving h with a certificate
// for "localhost", and a client that trusts it.
func testServer(t *testing.T, h http.Handler, mod func(*Options)) (*Server, *Transport) {
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
	tr := &Transport{TLS: &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"}}
	t.Cleanup(func() { tr.Close() })
	return s, tr
}

func get(t *testing.T, tr *Transport, method, url string, body io.Reader) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, body)
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return res, string(b)
}

func TestServeRequests(t *testing.T) {
	t.Parallel()
	s, tr := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		w.Header().Set("Trailer", "X-Sum")
		w.Header().Set("X-Proto", fmt.Sprintf("%s %d tls=%v", r.Proto, r.ProtoMajor, r.TLS != nil))
		w.Header().Set("X-Remote", r.RemoteAddr)
		fmt.Fprintf(w, "%s %s host=%s cl=%d body=%q x=%s", r.Method, r.RequestURI, r.Host, r.ContentLength, b, r.Header.Get("X-Test"))
		w.Header().Set("X-Sum", "42")
	}), nil)
	url := "https://" + s.Addr().String()
	for _, tc := range []struct {
		desc, method, path, body, want string
	}{
		{desc: "GET", method: "GET", path: "/a?b=c", want: `GET /a?b=c host=` + s.Addr().String() + ` cl=0 body="" x=1`},
		{desc: "POST with body", method: "POST", path: "/p", body: "hello", want: `POST /p host=` + s.Addr().String() + ` cl=5 body="hello" x=1`},
		{desc: "large body", method: "PUT", path: "/big", body: strings.Repeat("x", 100000), want: `PUT /big host=` + s.Addr().String() + ` cl=100000 body="` + strings.Repeat("x", 100000) + `" x=1`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequest(tc.method, url+tc.path, body)
			req.Header.Set("X-Test", "1")
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			if string(b) != tc.want {
				t.Errorf("body = %.200q, want %.200q", b, tc.want)
			}
			if got := res.Header.Get("X-Proto"); got != "HTTP/3.0 3 tls=true" {
				t.Errorf("X-Proto = %q", got)
			}
			if got := res.Header.Get("X-Remote"); !strings.HasPrefix(got, "127.0.0.1:") {
				t.Errorf("X-Remote = %q", got)
			}
			if got := res.Trailer.Get("X-Sum"); got != "42" {
				t.Errorf("trailer X-Sum = %q", got)
			}
		})
	}
	if st := s.Stats(); st.Requests != 3 || st.HandshakesOK != 1 || st.Active != 1 {
		t.Errorf("stats = %+v, want 3 requests over 1 connection", st)
	}
}

func TestHeaderLimit(t *testing.T) {
	t.Parallel()
	s, tr := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), func(o *Options) { o.MaxHeaderBytes = 1024 })
	req, _ := http.NewRequest("GET", "https://"+s.Addr().String()+"/", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 2000))
	res, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 431 {
		t.Errorf("status = %d, want 431", res.StatusCode)
	}
}

func TestMaxConnsPerSource(t *testing.T) {
	t.Parallel()
	s, _ := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), func(o *Options) { o.MaxConnsPerSource = 2 })
	var trs []*Transport
	ok := 0
	var lastErr error
	for range 3 {
		tr := &Transport{TLS: &tls.Config{InsecureSkipVerify: true}}
		trs = append(trs, tr)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := tr.Dial(ctx, s.Addr().String())
		cancel()
		if err == nil {
			ok++
		} else {
			lastErr = err
		}
	}
	for _, tr := range trs {
		tr.Close()
	}
	if ok != 2 || lastErr == nil {
		t.Fatalf("%d of 3 connections from one address made it (last error %v), want 2", ok, lastErr)
	}
	if st := s.Stats(); st.RefusedSource < 1 {
		t.Errorf("RefusedSource = %d, want at least 1", st.RefusedSource)
	}
}

// TestShutdownGraceful: a request in flight at Shutdown finishes; a new
// connection is not served; the connection then closes.
func TestShutdownGraceful(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s, tr := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "done "+r.URL.Path)
	}), nil)
	url := "https://" + s.Addr().String()
	if _, body := get(t, tr, "GET", url+"/warm", nil); body != "done /warm" {
		t.Fatalf("body %q", body)
	}
	var wg sync.WaitGroup
	var slowBody string
	var slowErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		req, _ := http.NewRequest("GET", url+"/slow", nil)
		res, err := tr.RoundTrip(req)
		if err != nil {
			slowErr = err
			return
		}
		b, err := io.ReadAll(res.Body)
		slowBody, slowErr = string(b), err
	}()
	<-started
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	testutil.Eventually(t, 5*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closing
	}, "shutdown did not start")
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
	tr2 := &Transport{TLS: &tls.Config{InsecureSkipVerify: true}}
	defer tr2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := tr2.Dial(ctx, s.Addr().String()); err == nil {
		t.Error("a new connection was accepted after Shutdown")
	}
}

func TestShutdownForced(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	s, tr := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}), nil)
	go func() {
		req, _ := http.NewRequest("GET", "https://"+s.Addr().String()+"/hang", nil)
		if res, err := tr.RoundTrip(req); err == nil {
			io.Copy(io.Discard, res.Body)
		}
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want the deadline", err)
	}
}
