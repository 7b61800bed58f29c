package router

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestRateLimitShared: one limit named by many routes holds its rate for
// all of them together, per key; a refused request gets 429 with
// Retry-After and the RateLimit headers and never reaches the upstream;
// a reload that keeps the limit keeps its buckets.
func TestRateLimitShared(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	lim := conf.Limit{Name: "api", Rate: 1, Per: time.Hour, Burst: 5, Key: "header", KeyName: "X-Api-Key", MaxKeys: 1000}
	var routes []conf.Route
	for _, p := range []string{"/a", "/b", "/c"} {
		r := testRoute(t, "r"+p[1:], "Path(`"+p+"`)", "u")
		r.Limits = []string{"api"}
		routes = append(routes, r)
	}
	routes = append(routes, testRoute(t, "free", "Path(`/free`)", "u"))
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    routes,
		Limits:    []conf.Limit{lim},
	}
	m := NewMetrics()
	rt, fe := front(t, cfg, Options{Metrics: m})
	ok := 0
	var last *http.Response
	start := time.Now()
	for i := range 12 {
		r, _ := do(t, nil, newReq(t, "GET", fe.URL+[]string{"/a", "/b", "/c"}[i%3], "X-Api-Key", "k1"))
		switch r.StatusCode {
		case 200:
			ok++
		case 429:
			last = r
		default:
			t.Fatalf("status %d", r.StatusCode)
		}
	}
	if ok != 5 || last == nil {
		t.Fatalf("%d of 12 requests over three routes admitted, want the burst, 5", ok)
	}
	if err := testutil.RetryAfterWithin(last.Header.Get("Retry-After"), time.Hour, start); err != nil {
		t.Errorf("%v (one request an hour once the burst is spent)", err)
	}
	if p, l := last.Header.Get("RateLimit-Policy"), last.Header.Get("RateLimit"); p != `"api";q=5;w=18000` || !strings.HasPrefix(l, `"api";r=0;t=`) {
		t.Errorf("RateLimit-Policy %q, RateLimit %q", p, l)
	}
	if last.Header.Get("X-Upstream") != "" {
		t.Error("a limited request reached the upstream")
	}
	if r, _ := do(t, nil, newReq(t, "GET", fe.URL+"/a", "X-Api-Key", "k2")); r.StatusCode != 200 {
		t.Errorf("another key: %d", r.StatusCode)
	}
	if r, _ := do(t, nil, newReq(t, "GET", fe.URL+"/free", "X-Api-Key", "k1")); r.StatusCode != 200 {
		t.Errorf("a route without the limit: %d", r.StatusCode)
	}
	if err := rt.Apply(cfg); err != nil { // the same limit: its buckets stay
		t.Fatal(err)
	}
	if r, _ := do(t, nil, newReq(t, "GET", fe.URL+"/b", "X-Api-Key", "k1")); r.StatusCode != 429 {
		t.Errorf("after a reload keeping the limit: %d, want 429", r.StatusCode)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	g := gather(t, reg)
	if a, l := g["edgeway_ratelimit_requests_total{limit=api,result=allowed}"], g["edgeway_ratelimit_requests_total{limit=api,result=limited}"]; a != 6 || l != 8 {
		t.Errorf("allowed %v limited %v, want 6 and 8", a, l)
	}
	if k := g["edgeway_ratelimit_keys{limit=api}"]; k != 2 {
		t.Errorf("keys %v, want 2", k)
	}
}

func TestCookieValue(t *testing.T) {
	t.Parallel()
	h := httpmsg.Header{{Name: "Cookie", Value: "a=1; sid=abc"}, {Name: "cookie", Value: "z=9"}}
	for name, want := range map[string]string{"sid": "abc", "a": "1", "z": "9", "none": ""} {
		if got := cookieValue(h, name); got != want {
			t.Errorf("cookieValue(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestMaxInFlight: a limit with max_in_flight lets a key hold that many
// requests at once; the next gets 429 until one finishes.
func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
	}))
	t.Cleanup(up.Close)
	r := testRoute(t, "r", "PathPrefix(`/`)", "u")
	r.Limits = []string{"conc"}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
		Limits:    []conf.Limit{{Name: "conc", MaxInFlight: 2, Burst: 1, Key: "client_ip", MaxKeys: 100}},
	}
	_, fe := front(t, cfg, Options{})
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(fe.URL + "/slow")
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
	}
	<-entered
	<-entered
	if resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/fast")); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a third request while two are held: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	for range 2 {
		if c := <-done; c != 200 {
			t.Errorf("a held request: %d", c)
		}
	}
	if resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/fast")); resp.StatusCode != 200 {
		t.Errorf("after both finished: %d", resp.StatusCode)
	}
}

// TestRateLimitMembersShare: with Options.Members counting 4 instances, a
// limit of burst 8 admits 2 here; when the count drops to 1 the next
// requests see the whole limit (less what the key spent already).
func TestRateLimitMembersShare(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	r := testRoute(t, "r", "PathPrefix(`/`)", "u")
	r.Limits = []string{"api"}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
		Limits:    []conf.Limit{{Name: "api", Rate: 8, Per: time.Hour, Burst: 8, Key: "header", KeyName: "K", MaxKeys: 10}},
	}
	var members atomic.Int64
	members.Store(4)
	_, fe := front(t, cfg, Options{Members: func() int { return int(members.Load()) }})
	admitted := func(key string, tries int) int {
		n := 0
		for range tries {
			if resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/", "K", key)); resp.StatusCode == 200 {
				n++
			}
		}
		return n
	}
	if n := admitted("a", 10); n != 2 {
		t.Fatalf("a quarter share of a burst of 8: %d admitted, want 2", n)
	}
	if n := admitted("b", 1); n != 1 {
		t.Fatal("another key refused")
	}
	members.Store(1)
	// b's one request at a quarter share spent a quarter of an hour's
	// rate: 4 of the whole limit's 8.
	if n := admitted("b", 10); n != 4 {
		t.Fatalf("alone: %d admitted, want the 4 left of the whole burst", n)
	}
}
