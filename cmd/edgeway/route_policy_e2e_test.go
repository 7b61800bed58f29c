package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestRouteResponseTimeout: a route's response_timeout replaces its
// pool's for that route only: a route with a short one gets 504 from a
// server that has not answered yet, while another route to the same pool
// (the pool's 60s) waits for the answer.
func TestRouteResponseTimeout(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan string, 4)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.URL.Path
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprint(w, "late")
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	routes := fmt.Sprintf("upstream slow {\n  server %s\n  retries { attempts 0 }\n}\n"+
		"route short {\n  match PathPrefix(`/short`)\n  response_timeout 300ms\n  to slow\n}\n"+
		"route long {\n  match PathPrefix(`/long`)\n  to slow\n}\n", hostPort(slow))
	p, base, _ := startEdgeway(t, "", map[string]string{"slow.routes": routes})

	long := make(chan string, 1)
	go func() {
		res, err := http.Get(base + "/long")
		if err != nil {
			long <- err.Error()
			return
		}
		res.Body.Close()
		long <- res.Status
	}()
	if got := <-arrived; got != "/long" {
		t.Fatalf("server got %s first, want /long", got)
	}
	if status, body := upstreamTLSGet(t, base+"/short"); status != 504 {
		t.Fatalf("/short: %d %q, want 504 after its 300ms response_timeout", status, body)
	}
	p.WaitLog(t, `route=short .*status=504 .*timeout=response_timeout`)
	select {
	case got := <-long:
		t.Fatalf("/long answered %q before the server did: the short route's timeout leaked", got)
	default:
	}
	close(release)
	if got := <-long; got != "200 OK" {
		t.Fatalf("/long: %s, want 200 OK once the server answers", got)
	}
}
