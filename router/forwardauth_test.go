package router

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// TestForwardAuth: the auth service decides; its refusal is the client's
// answer, its grant lets the request through with the copied fields (in
// place of the client's own), and a grant is remembered for the cache's
// time; a service that cannot be reached is a 503.
func TestForwardAuth(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	var sawURI, sawMethod atomic.Value
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		sawURI.Store(r.Header.Get("X-Forwarded-Uri"))
		sawMethod.Store(r.Header.Get("X-Forwarded-Method"))
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.Header().Set("X-Internal", "secret")
			w.WriteHeader(401)
			io.WriteString(w, "denied")
			return
		}
		w.Header().Set("X-User", "alice")
		w.Header().Set("X-Other", "not copied")
	}))
	t.Cleanup(auth.Close)
	up := backend(t, "a")
	r := testRoute(t, "app", "PathPrefix(`/`)", "u")
	r.ForwardAuth = &conf.ForwardAuth{URL: auth.URL + "/check", Timeout: 2 * time.Second, CopyHeaders: []string{"X-User"}, Cache: time.Minute}
	down := testRoute(t, "down", "PathPrefix(`/down`)", "u")
	down.ForwardAuth = &conf.ForwardAuth{URL: "http://127.0.0.1:1/check", Timeout: 2 * time.Second}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{down, r},
	}
	_, fe := front(t, cfg, Options{})
	resp, body := do(t, nil, newReq(t, "POST", fe.URL+"/x?y=1"))
	if resp.StatusCode != 401 || body != "denied" || resp.Header.Get("WWW-Authenticate") != "Bearer" || resp.Header.Get("X-Internal") != "" || resp.Header.Get("X-Upstream") != "" {
		t.Errorf("refused: %d %q, WWW-Authenticate %q, X-Internal %q, upstream %q", resp.StatusCode, body,
			resp.Header.Get("WWW-Authenticate"), resp.Header.Get("X-Internal"), resp.Header.Get("X-Upstream"))
	}
	if sawURI.Load() != "/x?y=1" || sawMethod.Load() != "POST" {
		t.Errorf("the auth service saw URI %v method %v", sawURI.Load(), sawMethod.Load())
	}
	for i := range 2 {
		resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/x", "Authorization", "Bearer good", "X-User", "root"))
		if resp.StatusCode != 200 || resp.Header.Get("X-Got-X-User") != "alice" || resp.Header.Get("X-Got-X-Other") != "" {
			t.Errorf("granted %d: %d, upstream saw X-User %q X-Other %q", i, resp.StatusCode, resp.Header.Get("X-Got-X-User"), resp.Header.Get("X-Got-X-Other"))
		}
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the auth service was asked %d times, want 2 (the second grant from the cache)", n)
	}
	if resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/down")); resp.StatusCode != 503 {
		t.Errorf("auth service down: %d, want 503", resp.StatusCode)
	}
}
