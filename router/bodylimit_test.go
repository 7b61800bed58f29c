package router

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// limitFront is a router whose listener allows limit body bytes, in front of
// an upstream that counts its requests, answers 200 with the number of body
// bytes it read, and sends its body read error (nil at EOF) on errs.
func limitFront(t *testing.T, limit int64) (fe *httptest.Server, calls *atomic.Int32, errs <-chan error, log, access *logSink) {
	t.Helper()
	calls = new(atomic.Int32)
	ch := make(chan error, 4)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		n, err := io.Copy(io.Discard, r.Body)
		ch <- err
		io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	t.Cleanup(up.Close)
	l := testListener()
	l.MaxBodyBytes = limit
	fixed := testRoute(t, "fixed", "Path(`/fixed`)", "", conf.Middleware{Kind: conf.Respond, Code: 200, Arg: "fixed"})
	fixed.Priority = 100
	cfg := &conf.Config{
		Listeners: []conf.Listener{l},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes: []conf.Route{
			fixed,
			testRoute(t, "all", "PathPrefix(`/`)", "u"),
		},
	}
	log, access = &logSink{}, &logSink{}
	_, fe = front(t, cfg, Options{Log: slog.New(log), AccessLog: slog.New(access)})
	return fe, calls, ch, log, access
}

// post sends size body bytes, with a Content-Length or chunked.
func post(t *testing.T, url string, size int, chunked bool) (*http.Response, string) {
	t.Helper()
	req := newReq(t, "POST", url)
	req.Body = io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("x"), size)))
	req.ContentLength = int64(size)
	if chunked {
		req.ContentLength = -1
	}
	return do(t, nil, req)
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	const limit = 16 << 10
	tests := []struct {
		desc    string
		path    string
		size    int
		chunked bool
		status  int
		body    string
		calls   int32 // -1: zero or one (the cut may come before the upstream saw the head)
		upErr   bool  // the upstream saw an aborted body
	}{
		{desc: "content-length over", path: "/", size: limit + 1, status: 413, body: "Request Entity Too Large\n"},
		{desc: "content-length at limit", path: "/", size: limit, status: 200, body: strconv.Itoa(limit), calls: 1},
		{desc: "chunked over", path: "/", size: 4 * limit, chunked: true, status: 413, body: "Request Entity Too Large\n", calls: -1, upErr: true},
		{desc: "chunked at limit", path: "/", size: limit, chunked: true, status: 200, body: strconv.Itoa(limit), calls: 1},
		{desc: "respond route reads nothing", path: "/fixed", size: limit + 1, status: 200, body: "fixed"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			fe, calls, errs, log, access := limitFront(t, limit)
			resp, body := post(t, fe.URL+tc.path, tc.size, tc.chunked)
			if resp.StatusCode != tc.status || body != tc.body {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.status, tc.body)
			}
			n := calls.Load()
			if n != tc.calls && !(tc.calls == -1 && n <= 1) {
				t.Errorf("upstream called %d times, want %d", n, tc.calls)
			}
			if n > 0 {
				if err := <-errs; (err != nil) != tc.upErr {
					t.Errorf("upstream body error = %v, want an error: %v", err, tc.upErr)
				}
			}
			testutil.WaitFor(t, "access log line", func() bool { _, _, ok := access.find("request"); return ok })
			if a, _, _ := access.find("request"); a["status"] != strconv.Itoa(tc.status) {
				t.Errorf("access log status = %q, want %d", a["status"], tc.status)
			}
			if tc.status != 413 {
				return
			}
			if !resp.Close {
				t.Errorf("413 without Connection: close")
			}
			if a, level, ok := log.find("request body too large"); !ok || level != slog.LevelWarn || a["route"] != "all" {
				t.Errorf("log = %v %v %v, want Warn naming the route", a, level, ok)
			}
		})
	}
}

func TestBodyLimitConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		set  int64
		want int64
	}{
		{desc: "zero value means the default", set: 0, want: conf.DefaultMaxBodyBytes},
		{desc: "unlimited", set: conf.UnlimitedBody, want: 0},
		{desc: "one byte", set: 1, want: 1},
		{desc: "large", set: 1 << 40, want: 1 << 40},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := bodyLimit(conf.Listener{MaxBodyBytes: tc.set}); got != tc.want {
				t.Errorf("bodyLimit(%d) = %d, want %d", tc.set, got, tc.want)
			}
		})
	}
}

func TestLimitRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc         string
		n            int
		total, limit int64
		wantN        int
		wantErr      bool
	}{
		{desc: "no limit", n: 10, total: 1 << 40, limit: 0, wantN: 10},
		{desc: "under", n: 10, total: 90, limit: 100, wantN: 10},
		{desc: "exactly at", n: 10, total: 100, limit: 100, wantN: 10},
		{desc: "crossing", n: 10, total: 104, limit: 100, wantN: 6, wantErr: true},
		{desc: "already past", n: 10, total: 150, limit: 100, wantN: 0, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			n, err := limitRead(tc.n, tc.total, tc.limit)
			if n != tc.wantN || (err != nil) != tc.wantErr {
				t.Errorf("limitRead = %d, %v; want %d, error %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}
}
