package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// mirrorSeen is a mirror pool's server that records what reaches it.
type mirrorSeen struct {
	mu    sync.Mutex
	reqs  []string // "METHOD path host body xff"
	count atomic.Int64
}

func (m *mirrorSeen) handler(hold <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) == 0 {
			b = []byte("-")
		}
		m.mu.Lock()
		m.reqs = append(m.reqs, fmt.Sprintf("%s %s %s %s %s", r.Method, r.URL.Path, r.Host, b, r.Header.Get("X-Forwarded-For")))
		m.mu.Unlock()
		m.count.Add(1)
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
		}
		fmt.Fprint(w, "mirror answer, dropped by edgeway")
	}
}

// TestRouteMirror: `mirror shadow 10%` copies exactly one request in ten
// to the shadow pool, head and body as the primary gets them, while the
// client only ever sees the primary's answers; copies are counted.
func TestRouteMirror(t *testing.T) {
	var primary atomic.Int64
	main := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		primary.Add(1)
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, "primary")
	}))
	t.Cleanup(main.Close)
	seen := &mirrorSeen{}
	shadow := httptest.NewServer(seen.handler(nil))
	t.Cleanup(shadow.Close)
	routes := fmt.Sprintf("upstream app { server %s }\nupstream shadow { server %s }\n"+
		"route r {\n  match PathPrefix(`/`)\n  mirror shadow 10%%\n  to app\n}\n", hostPort(main), hostPort(shadow))
	e := startAdmin(t, "", map[string]string{"r.routes": routes})

	for i := range 100 {
		var res *http.Response
		var err error
		if i%4 < 2 { // copies go to requests 9, 19, ...: POSTs and GETs
			res, err = http.Post(fmt.Sprintf("%s/post/%d", e.base, i), "text/plain", strings.NewReader(fmt.Sprintf("body-%d", i)))
		} else {
			res, err = http.Get(fmt.Sprintf("%s/get/%d", e.base, i))
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != "primary" {
			t.Fatalf("request %d: %d %q, want the primary's answer", i, res.StatusCode, b)
		}
	}
	sent := `edgeway_upstream_mirror_requests_total{result="sent",upstream="shadow"}`
	testutil.WaitFor(t, "10 copies answered", func() bool { return e.metricValue(t, sent) == "10" })
	if n := seen.count.Load(); n != 10 {
		t.Errorf("the shadow pool got %d copies of 100 requests, want exactly 10", n)
	}
	if n := primary.Load(); n != 100 {
		t.Errorf("the primary got %d requests, want 100", n)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	posts := 0
	for _, r := range seen.reqs {
		f := strings.Fields(r)
		if len(f) != 5 || !strings.HasPrefix(f[2], "127.0.0.1:") || f[4] != "127.0.0.1" {
			t.Errorf("copy %q: want the client's Host and X-Forwarded-For", r)
			continue
		}
		if f[0] == "POST" {
			posts++
			if want := "body-" + strings.TrimPrefix(f[1], "/post/"); f[3] != want {
				t.Errorf("copy %q: body %q, want %q", r, f[3], want)
			}
		}
	}
	if posts == 0 {
		t.Errorf("no POST among the copies %q", seen.reqs)
	}
}

// TestRouteMirrorHanging: a mirror pool that never answers costs the
// primary nothing: every request is answered by the primary, at most
// the in-flight bound of copies is held, and the rest are dropped and
// counted.
func TestRouteMirrorHanging(t *testing.T) {
	main := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "primary") }))
	t.Cleanup(main.Close)
	hold := make(chan struct{})
	seen := &mirrorSeen{}
	shadow := httptest.NewServer(seen.handler(hold))
	t.Cleanup(shadow.Close)
	t.Cleanup(func() { close(hold) })
	routes := fmt.Sprintf("upstream app { server %s }\nupstream shadow {\n  server %s\n}\n"+
		"route r {\n  match PathPrefix(`/`)\n  mirror shadow\n  to app\n}\n", hostPort(main), hostPort(shadow))
	e := startAdmin(t, "", map[string]string{"r.routes": routes})

	const n = 200
	for i := range n {
		c := &http.Client{Timeout: 30 * time.Second}
		res, err := c.Get(fmt.Sprintf("%s/%d", e.base, i))
		if err != nil {
			t.Fatalf("request %d with the mirror hanging: %v", i, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || string(b) != "primary" {
			t.Fatalf("request %d: %d %q", i, res.StatusCode, b)
		}
	}
	dropped := `edgeway_upstream_mirror_requests_total{result="dropped",upstream="shadow"}`
	testutil.WaitFor(t, "copies dropped counted", func() bool { return e.metricValue(t, dropped) != "" })
	testutil.WaitFor(t, "64 copies held at the mirror", func() bool { return seen.count.Load() == 64 })
	if got, want := e.metricValue(t, dropped), fmt.Sprint(n-64); got != want {
		t.Errorf("%s = %s, want %s (the copies past the 64 in flight)", dropped, got, want)
	}
}
