package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// mirrorMetric reads one counter of /metrics as a number (0 when absent).
func mirrorMetric(t *testing.T, e *adminEdgeway, sample string) int {
	t.Helper()
	n, _ := strconv.Atoi(e.metric(t, sample))
	return n
}

// TestMirrorHanging: with the mirror pool's server never answering, every
// request still gets the primary's answer, and the copies past the
// bounded queue are counted as dropped.
func TestMirrorHanging(t *testing.T) {
	primary := backend(t, "primary")
	release := make(chan struct{})
	var arrived atomic.Int64
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	routes := map[string]string{"m.routes": fmt.Sprintf("upstream primary { server %s }\n"+
		"upstream shadow {\n  server %s\n  retries { attempts 0 }\n}\n"+
		"route r {\n  match PathPrefix(`/`)\n  mirror shadow\n  to primary\n}\n", hostPort(primary), hostPort(hang))}
	e := startAdminIn(t, t.TempDir(), "", "", routes)
	c := &http.Client{}
	for i := range 200 {
		if b, status, _ := splitGet(t, c, e.base+"/x"); status != 200 || b != "primary" {
			t.Fatalf("request %d: %d from %q, want the primary's 200 whatever the mirror does", i, status, b)
		}
	}
	testutil.WaitFor(t, "copies dropped", func() bool {
		return mirrorMetric(t, e, `edgeway_mirror_requests_total{result="dropped",route="r",upstream="shadow"}`) > 0
	})
	dropped := mirrorMetric(t, e, `edgeway_mirror_requests_total{result="dropped",route="r",upstream="shadow"}`)
	if dropped < 200-64-4-int(arrived.Load()) || dropped > 200 {
		t.Errorf("%d copies dropped of 200 (%d reached the mirror), want the ones past the queue of 64 and 4 workers", dropped, arrived.Load())
	}
}

// TestMirrorShareAndDiffers: `mirror POOL 50%` copies exactly half of
// the requests; a mirror answering 500 to the primary's 200 is counted
// in edgeway_mirror_status_differs_total; a request with a body is not
// copied (counted skipped).
func TestMirrorShareAndDiffers(t *testing.T) {
	primary := backend(t, "primary")
	var got atomic.Int64
	shadow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(500)
	}))
	t.Cleanup(shadow.Close)
	routes := map[string]string{"m.routes": fmt.Sprintf("upstream primary { server %s }\n"+
		"upstream shadow {\n  server %s\n  retries { attempts 0 }\n  outlier { consecutive_5xx off }\n}\n"+
		"route r {\n  match PathPrefix(`/`)\n  mirror shadow 50%%\n  to primary\n}\n", hostPort(primary), hostPort(shadow))}
	e := startAdminIn(t, t.TempDir(), "", "", routes)
	c := &http.Client{}
	for range 20 {
		if _, status, _ := splitGet(t, c, e.base+"/x"); status != 200 {
			t.Fatalf("primary answered %d", status)
		}
	}
	sample := `edgeway_mirror_status_differs_total{route="r",upstream="shadow"}`
	testutil.WaitFor(t, "10 mirror answers counted", func() bool { return mirrorMetric(t, e, sample) == 10 })
	if n := got.Load(); n != 10 {
		t.Errorf("the mirror got %d copies of 20 requests, want exactly 10 (50%%)", n)
	}
	if n := mirrorMetric(t, e, `edgeway_mirror_requests_total{result="sent",route="r",upstream="shadow"}`); n != 10 {
		t.Errorf("sent %d, want 10", n)
	}
	for range 2 {
		if s := policyPost(t, e.base+"/x", "body"); s != 200 {
			t.Fatalf("POST: %d", s)
		}
	}
	if n := mirrorMetric(t, e, `edgeway_mirror_requests_total{result="skipped",route="r",upstream="shadow"}`); n != 1 {
		t.Errorf("skipped %d, want 1 (one of the two POSTs falls in the 50%%; bodies are not copied)", n)
	}
}
