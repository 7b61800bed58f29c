package router

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/panics"
)

// panicky is a request body that panics on its second read: the first
// is taken before the upstream is contacted, the second on the upstream
// client's body writer goroutine (edgeway's for HTTP/1.1, x/net's for
// h2c), where nothing of net/http recovers.
type panicky struct {
	r     io.Reader
	reads int
}

func (p *panicky) Read(b []byte) (int, error) {
	if p.reads++; p.reads > 1 {
		panic("deliberate panic in a request body read")
	}
	return p.r.Read(b[:min(len(b), 1024)])
}

func (p *panicky) Close() error { return nil }

// panickyWriter panics when the response body is written: a fault in the
// router's own relay, on the handler's goroutine.
type panickyWriter struct{ http.ResponseWriter }

func (panickyWriter) Write([]byte) (int, error) { panic("deliberate panic in a response write") }

// TestPanicsInARequestAreContained injects panics into a proxied
// request's path, on the handler's goroutine and on the goroutine that
// copies the request body upstream (both protocols), and checks what a
// user sees: that request fails, the panic is counted, and the proxy goes
// on serving (an unrecovered panic would end this test binary).
func TestPanicsInARequestAreContained(t *testing.T) {
	for _, tc := range []struct {
		name, protocol, inject, where string
	}{
		{"body copier http1", "http1", "body", "upstream request body writer"},
		{"body copier h2c", "h2c", "body", "upstream h2 request body"},
		{"relay h2c", "h2c", "write", "request"},
		{"relay http1", "http1", "write", "request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int32
			up := httptest.NewUnstartedServer(h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
				io.Copy(io.Discard, r.Body)
				io.WriteString(w, "ok "+r.URL.Path)
			}), &http2.Server{}))
			up.Start()
			t.Cleanup(up.Close)
			u := testUpstream("app", []string{addr(up)})
			u.Protocol = tc.protocol
			cfg := &conf.Config{Listeners: []conf.Listener{testListener()}, Upstreams: []conf.Upstream{u},
				// The body streams, so that its copier is the one that panics.
				Routes: []conf.Route{streaming(testRoute(t, "all", "PathPrefix(`/`)", "app"))}}
			rt := New(Options{})
			if err := rt.Apply(cfg); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rt.Close)
			h := rt.Handler("web")
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Inject") == "body" {
					r.Body = &panicky{r: r.Body}
				}
				if r.Header.Get("X-Inject") == "write" {
					w = panickyWriter{w}
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			panics.SetLogger(slog.New(slog.DiscardHandler))
			t.Cleanup(func() { panics.SetLogger(nil) })
			before := panics.Count(tc.where)

			c := &http.Client{Timeout: 10 * time.Second}
			req, _ := http.NewRequest("POST", front.URL+"/upload", strings.NewReader(strings.Repeat("x", 64<<10)))
			req.Header.Set("X-Inject", tc.inject)
			res, err := c.Do(req)
			switch {
			case err != nil && tc.inject == "write":
				// The relay's panic aborts the response: the connection
				// closes, which is what a client sees of it.
			case err != nil:
				t.Fatalf("request with a panicking body: %v", err)
			default:
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if tc.inject == "body" && res.StatusCode != 500 {
					t.Errorf("request with a panicking body answered %d, want 500 (edgeway's fault)", res.StatusCode)
				}
			}
			if got := panics.Count(tc.where) - before; got != 1 {
				t.Errorf("edgeway_panics_total{where=%q} went up by %v, want 1", tc.where, got)
			}
			// The proxy goes on serving, on the same upstream.
			for i := range 3 {
				res, err := c.Get(front.URL + "/after")
				if err != nil {
					t.Fatalf("request %d after the panic: %v", i, err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 || string(b) != "ok /after" {
					t.Fatalf("request %d after the panic: %d %q", i, res.StatusCode, b)
				}
			}
		})
	}
}
