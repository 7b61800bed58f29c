package health

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// checkTimeout bounds the checks of a live loopback server. No test here
// is about the timeout, so it is a margin a loaded CI machine (with -race)
// cannot miss; a passing check takes milliseconds.
const checkTimeout = 10 * time.Second

func TestHTTPCheck(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			w.WriteHeader(503)
		case "/host":
			io.WriteString(w, r.Host)
		default:
			io.WriteString(w, "all good")
		}
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	tests := []struct {
		desc   string
		mod    func(*conf.HealthCheck)
		ok     bool
		reason string
	}{
		{desc: "default passes", mod: func(*conf.HealthCheck) {}, ok: true, reason: "status 200"},
		{desc: "503 fails", mod: func(h *conf.HealthCheck) { h.Path = "/down" }, reason: "status 503 (expected 200-399)"},
		{desc: "503 expected", mod: func(h *conf.HealthCheck) { h.Path = "/down"; h.Expect = []conf.StatusRange{{Lo: 503, Hi: 503}} }, ok: true},
		{desc: "body found", mod: func(h *conf.HealthCheck) { h.Body = "good" }, ok: true},
		{desc: "body missing", mod: func(h *conf.HealthCheck) { h.Body = "bad" }, reason: `status 200, body does not contain "bad"`},
		{desc: "host sent", mod: func(h *conf.HealthCheck) { h.Path, h.Host, h.Body = "/host", "api.internal", "api.internal" }, ok: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := conf.DefaultHealthCheck()
			tc.mod(&cfg)
			r := CheckTimeout(context.Background(), New(cfg, Options{}), addr, checkTimeout)
			if r.OK != tc.ok || tc.reason != "" && r.Reason != tc.reason {
				t.Errorf("check = %+v, want ok %v reason %q", r, tc.ok, tc.reason)
			}
		})
	}
}

func TestTCPCheck(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	cfg := conf.HealthCheck{Type: "tcp"}
	if r := CheckTimeout(context.Background(), New(cfg, Options{}), addr, checkTimeout); !r.OK {
		t.Errorf("open port: %+v", r)
	}
	ln.Close()
	if r := CheckTimeout(context.Background(), New(cfg, Options{}), addr, checkTimeout); r.OK || !strings.Contains(r.Reason, "connect: ") {
		t.Errorf("closed port: %+v", r)
	}
}

func TestNextJitter(t *testing.T) {
	t.Parallel()
	var x uint64
	rnd := func() uint64 { x = x*6364136223846793005 + 1442695040888963407; return x >> 1 }
	lo, hi := time.Hour, time.Duration(0)
	for range 1000 {
		d := Next(10*time.Second, 10, rnd)
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo < 9*time.Second || hi > 11*time.Second || hi-lo < 1500*time.Millisecond {
		t.Errorf("jittered waits span %v..%v, want within and across 9s..11s", lo, hi)
	}
	if d := Next(time.Second, 0, rnd); d != time.Second {
		t.Errorf("no jitter: %v", d)
	}
}

// TestRunStopsAndRecovers checks that a loop survives a panicking check
// and ends with its context.
func TestRunStopsAndRecovers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls, panics := make(chan struct{}, 10), make(chan any, 10)
	done := make(chan struct{})
	// The loop checks every millisecond until cancel: its sends must not
	// block once the buffers are full, or a test goroutine slow to reach
	// cancel (a loaded machine) would leave Run stuck in a check.
	go func() {
		defer close(done)
		Run(ctx, time.Millisecond, 0, nil, func(context.Context) {
			select {
			case calls <- struct{}{}:
			default:
			}
			panic("boom")
		}, func(v any) {
			select {
			case panics <- v:
			default:
			}
		})
	}()
	<-calls
	<-calls // a second call: the first panic did not end the loop
	if v := <-panics; v != "boom" {
		t.Errorf("panic value %v", v)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
