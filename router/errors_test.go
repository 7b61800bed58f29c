package router

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

// logSink records log records for assertions.
type logSink struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, r.Clone())
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

func (s *logSink) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = nil
}

// count returns how many records have msg.
func (s *logSink) count(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.recs {
		if r.Message == msg {
			n++
		}
	}
	return n
}

// find returns the attributes of the first record with msg, as strings.
func (s *logSink) find(msg string) (map[string]string, slog.Level, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.Message != msg {
			continue
		}
		m := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
		return m, r.Level, true
	}
	return nil, 0, false
}

// rawServer accepts connections and hands each to fn.
func rawServer(t testing.TB, fn func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go fn(c)
		}
	}()
	return ln.Addr().String()
}

func closedAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

// hang is an upstream that reads the request and never answers until the
// test ends.
func hang(t testing.TB) string {
	a, _ := hangSignal(t)
	return a
}

// hangSignal is hang that also says when a request arrived.
func hangSignal(t testing.TB) (string, <-chan struct{}) {
	done, got := make(chan struct{}), make(chan struct{}, 16)
	t.Cleanup(func() { close(done) })
	return rawServer(t, func(c net.Conn) {
		defer c.Close()
		http.ReadRequest(bufio.NewReader(c))
		got <- struct{}{}
		<-done
	}), got
}

func TestUpstreamErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		addr    func(t testing.TB) string
		tune    func(*conf.Upstream)
		status  int
		timeout string // the setting the log names, if any
	}{
		{desc: "connection refused", addr: closedAddr, status: 502},
		{desc: "bad response", addr: func(t testing.TB) string {
			return rawServer(t, func(c net.Conn) { io.WriteString(c, "HELLO\r\n\r\n"); c.Close() })
		}, status: 502},
		{desc: "closed without answer", addr: func(t testing.TB) string {
			return rawServer(t, func(c net.Conn) { http.ReadRequest(bufio.NewReader(c)); c.Close() })
		}, status: 502},
		{desc: "response header timeout", addr: hang, tune: func(u *conf.Upstream) { u.ResponseTimeout = 100 * time.Millisecond },
			status: 504, timeout: "response_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			status, body, log := errorThrough(t, tc.addr(t), tc.tune)
			if status != tc.status || body != http.StatusText(tc.status)+"\n" {
				t.Errorf("got %d %q, want %d with status text only", status, body, tc.status)
			}
			attrs, level, ok := log.find("upstream request failed")
			if !ok || level != slog.LevelWarn || attrs["route"] != "all" || attrs["server"] == "" || attrs["error"] == "" {
				t.Errorf("error log = %v %v %v, want Warn with route, server and error", attrs, level, ok)
			}
			if attrs["timeout"] != tc.timeout {
				t.Errorf("error log names timeout %q, want %q", attrs["timeout"], tc.timeout)
			}
		})
	}
}

// errorThrough sends one GET through a router whose upstream is at addr.
func errorThrough(t testing.TB, addr string, tune func(*conf.Upstream)) (int, string, *logSink) {
	t.Helper()
	u := testUpstream("u", []string{addr})
	if tune != nil {
		tune(&u)
	}
	sink := &logSink{}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{u},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
	}
	_, fe := front(t, cfg, Options{Log: slog.New(sink)})
	resp, body := do(t, nil, newReq(t, "GET", fe.URL+"/"))
	return resp.StatusCode, body, sink
}

func TestClientGone(t *testing.T) {
	t.Parallel()
	sink, access := &logSink{}, &logSink{}
	upAddr, arrived := hangSignal(t)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{upAddr})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
	}
	_, fe := front(t, cfg, Options{Log: slog.New(sink), AccessLog: slog.New(access)})
	ctx, cancel := context.WithCancel(context.Background())
	req := newReq(t, "GET", fe.URL+"/").WithContext(ctx)
	errc := make(chan error, 1)
	go func() { _, err := http.DefaultClient.Do(req); errc <- err }()
	<-arrived
	cancel()
	<-errc
	testutil.WaitFor(t, "access log line", func() bool { _, _, ok := access.find("request"); return ok })
	attrs, _, _ := access.find("request")
	if attrs["status"] != "499" {
		t.Errorf("access log status = %q, want 499", attrs["status"])
	}
	if _, level, ok := sink.find("upstream request failed"); !ok || level != slog.LevelDebug {
		t.Errorf("client abort logged at %v (found %v), want Debug", level, ok)
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	access := &logSink{}
	a := backend(t, "a")
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(a)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")},
	}
	_, fe := front(t, cfg, Options{AccessLog: slog.New(access)})
	req := newReq(t, "POST", fe.URL+"/p?q=1", "Host", "h.example")
	req.Body = io.NopCloser(strings.NewReader("12345"))
	req.ContentLength = 5
	do(t, nil, req)
	testutil.WaitFor(t, "access log line", func() bool { _, _, ok := access.find("request"); return ok })
	got, _, _ := access.find("request")
	want := map[string]string{"listener": "web", "protocol": "HTTP/1.1", "method": "POST", "host": "h.example", "path": "/p",
		"query": "q=1", "status": "200", "bytes_in": "5", "bytes_out": "1", "route": "all", "upstream": "a", "server": addr(a),
		"tries": "1", "user_agent": "Go-http-client/1.1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	d, err := strconv.ParseFloat(got["duration"], 64)
	if got["client"] == "" || err != nil || d <= 0 || d > 60 {
		t.Errorf("client missing or duration not in seconds: %v", got)
	}
	// The first request opened the upstream connection: it took some
	// time, and so did the wait for the head, within the whole.
	connect, err1 := strconv.ParseFloat(got["upstream_connect"], 64)
	head, err2 := strconv.ParseFloat(got["upstream_header"], 64)
	if err1 != nil || err2 != nil || connect <= 0 || head < connect || head > d {
		t.Errorf("upstream_connect %q, upstream_header %q: want 0 < connect <= header <= duration %v", got["upstream_connect"], got["upstream_header"], d)
	}
	if _, ok := got["tls_version"]; ok {
		t.Errorf("tls_version on a plain request: %v", got)
	}
}

func TestLoggedQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mode, q, want string }{
		{"keep", "token=s3cret&page=2", "token=s3cret&page=2"},
		{"", "a=1", "a=1"},
		{"drop", "token=s3cret", ""},
		{"redact", "token=s3cret&page=2&flag", "token=x&page=x&flag"},
		{"redact", "", ""},
		{"redact", "a=&=b", "a=x&=x"},
	} {
		if got := loggedQuery(tc.mode, tc.q); got != tc.want {
			t.Errorf("loggedQuery(%q, %q) = %q, want %q", tc.mode, tc.q, got, tc.want)
		}
	}
}
