package listeners

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/h2conn"
	"github.com/edgeway/edgeway/listeners/h2guard"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
)

// h2Env is a listener serving a live router whose one route proxies
// everything to the pool "u" (outlier ejection and a breaker on, so that
// a failure counted against a server shows).
type h2Env struct {
	srv *Server
	rt  *router.Router
}

func startH2Env(t *testing.T, cfg conf.Listener, upAddrs ...string) *h2Env {
	t.Helper()
	return startH2EnvGuard(t, cfg, nil, upAddrs...)
}

// startH2EnvGuard is startH2Env with tune applied to the listener's
// h2guard limits before it serves (none of them is a conf option); nil
// keeps the defaults.
func startH2EnvGuard(t *testing.T, cfg conf.Listener, tune func(*h2guard.Config), upAddrs ...string) *h2Env {
	t.Helper()
	cfg.Name = "web"
	r, err := rule.Parse(rule.HTTP, "PathPrefix(`/`)")
	if err != nil {
		t.Fatal(err)
	}
	up := conf.Upstream{Name: "u", ConnectTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second,
		IdleTimeout: 5 * time.Second, MaxIdleConns: 16,
		Outlier: &conf.Outlier{Consecutive5xx: 1, ConsecutiveConnectFailures: 1, BaseEjection: time.Minute,
			MaxEjection: time.Minute, MaxEjectionPercent: 100},
		Breaker: &conf.Breaker{ErrorRate: 1, MinRequests: 1, Window: time.Minute, CoolDown: time.Minute, Trials: 1}}
	for _, a := range upAddrs {
		up.Servers = append(up.Servers, conf.Server{Addr: a, Weight: 1})
	}
	cc := &conf.Config{Listeners: []conf.Listener{cfg}, Upstreams: []conf.Upstream{up},
		Routes: []conf.Route{{Name: "all", Rule: r, RuleText: "PathPrefix(`/`)", Priority: r.DefaultPriority(), Upstream: "u"}}}
	rt := router.New(router.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := rt.Apply(cc); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	t.Cleanup(rt.Close)
	if tune == nil {
		return &h2Env{srv: start(t, cfg, rt.Proxy("web")), rt: rt}
	}
	return &h2Env{srv: startTuned(t, cfg, rt.Proxy("web"), tune), rt: rt}
}

// startTuned is start with tune applied to the h2guard limits between
// Listen and Serve, so that no connection reads them while they change.
func startTuned(t *testing.T, cfg conf.Listener, h httpmsg.Handler, tune func(*h2guard.Config)) *Server {
	t.Helper()
	s, err := Listen(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if s.h2 == nil {
		t.Fatal("the listener serves no HTTP/2")
	}
	f := s.h2.cur.Load()
	tune(&f.guard)
	if f.own != nil {
		f.ownCfg.MaxControlPerSecond = f.guard.MaxControlPerSecond
		f.own = h2conn.New(f.ownCfg)
	}
	return serve(t, s)
}

// h2Servers are the HTTP/2 servers a listener may run (h2_server): the
// HTTP/2 tests run against each.
var h2Servers = []string{"xnet", "own"}

// forEachH2Server runs f as a subtest per HTTP/2 server, with cfg's
// h2_server set to it.
func forEachH2Server(t *testing.T, cfg conf.Listener, f func(t *testing.T, cfg conf.Listener)) {
	for _, srv := range h2Servers {
		t.Run(srv, func(t *testing.T) {
			c := cfg
			c.H2Server = srv
			f(t, c)
		})
	}
}

// status is the pool's one server's status.
func (e *h2Env) status(t *testing.T) upstream.ServerStatus {
	t.Helper()
	st := e.rt.Pools()["u"].Status()
	if len(st.Servers) == 0 {
		t.Fatal("pool u has no server")
	}
	return st.Servers[0]
}

// assertHealthy fails when a failure was counted against the upstream.
func (e *h2Env) assertHealthy(t *testing.T) {
	t.Helper()
	if s := e.status(t); s.Failures != 0 || s.State != upstream.Healthy {
		t.Errorf("upstream after a client's mistake: state %v, %d failures (%s), want healthy and 0", s.State, s.Failures, s.Reason)
	}
}

// h2Client is a raw HTTP/2 client over a real TCP connection: it writes
// exactly the frames a test asks for.
type h2Client struct {
	t    *testing.T
	c    net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	enc  *hpack.Encoder
	wmu  sync.Mutex
}

// dialH2 connects, sends the preface and the given settings, and
// acknowledges the server's SETTINGS as it reads.
func dialH2(t *testing.T, addr string, settings ...http2.Setting) *h2Client {
	t.Helper()
	c := testutil.DialRaw(t, addr)
	hc := &h2Client{t: t, c: c}
	hc.fr = http2.NewFramer(c, bufio.NewReader(c))
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	hc.fr.MaxHeaderListSize = 1 << 20
	hc.enc = hpack.NewEncoder(&hc.hbuf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	hc.write(func() error { return hc.fr.WriteSettings(settings...) })
	return hc
}

func (hc *h2Client) write(f func() error) {
	hc.wmu.Lock()
	defer hc.wmu.Unlock()
	if err := f(); err != nil {
		hc.t.Errorf("writing a frame: %v", err)
	}
}

// block encodes a header block: the pseudo-fields of a GET / on
// example.com (overridden by kv), then kv's pairs in order.
func (hc *h2Client) block(kv ...string) []byte {
	hc.wmu.Lock()
	defer hc.wmu.Unlock()
	hc.hbuf.Reset()
	pseudo := map[string]string{":method": "GET", ":scheme": "http", ":authority": "example.com", ":path": "/"}
	for i := 0; i+1 < len(kv); i += 2 {
		if _, ok := pseudo[kv[i]]; ok {
			pseudo[kv[i]] = kv[i+1]
		}
	}
	for _, k := range []string{":method", ":scheme", ":authority", ":path"} {
		if v := pseudo[k]; v != "-" {
			hc.enc.WriteField(hpack.HeaderField{Name: k, Value: v})
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if !strings.HasPrefix(kv[i], ":") {
			hc.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
	}
	return bytes.Clone(hc.hbuf.Bytes())
}

// request opens stream id with a complete header block.
func (hc *h2Client) request(id uint32, endStream bool, kv ...string) {
	b := hc.block(kv...)
	hc.write(func() error {
		return hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndStream: endStream, EndHeaders: true})
	})
}

func (hc *h2Client) data(id uint32, end bool, p string) {
	hc.write(func() error { return hc.fr.WriteData(id, end, []byte(p)) })
}

// h2Result is what a client saw of one stream, or of the connection.
type h2Result struct {
	status  string // :status of the final response
	body    []byte
	reset   http2.ErrCode
	isReset bool
	ended   bool
}

// h2Events collects frames until done says stop, the connection ends or
// the deadline passes. It acknowledges SETTINGS and PINGs.
type h2Events struct {
	streams map[uint32]*h2Result
	goaway  *http2.GoAwayFrame
	closed  bool // the connection ended (EOF or reset)
	frames  int
}

func (hc *h2Client) readUntil(timeout time.Duration, done func(ev *h2Events) bool) *h2Events {
	hc.t.Helper()
	ev := &h2Events{streams: map[uint32]*h2Result{}}
	hc.c.SetReadDeadline(time.Now().Add(timeout))
	defer hc.c.SetReadDeadline(time.Time{})
	st := func(id uint32) *h2Result {
		if ev.streams[id] == nil {
			ev.streams[id] = &h2Result{}
		}
		return ev.streams[id]
	}
	for !done(ev) {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				hc.t.Fatalf("no answer within %v (seen %d frames, goaway %v)", timeout, ev.frames, ev.goaway != nil)
			}
			ev.closed = true
			return ev
		}
		ev.frames++
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() && hc.wmu.TryLock() {
				// A flooding writer may hold the lock, blocked on a
				// server that waits for this reader: skip the ACK then.
				hc.fr.WriteSettingsAck()
				hc.wmu.Unlock()
			}
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "" && s[0] != '1' {
				st(f.StreamID).status = s
			}
			st(f.StreamID).ended = f.StreamEnded()
		case *http2.DataFrame:
			r := st(f.StreamID)
			r.body = append(r.body, f.Data()...)
			r.ended = f.StreamEnded()
		case *http2.RSTStreamFrame:
			st(f.StreamID).isReset, st(f.StreamID).reset = true, f.ErrCode
		case *http2.GoAwayFrame:
			ev.goaway = f
		}
	}
	return ev
}

// answered is a readUntil condition: stream id ended or was reset.
func answered(id uint32) func(*h2Events) bool {
	return func(ev *h2Events) bool {
		r := ev.streams[id]
		return ev.closed || ev.goaway != nil || (r != nil && (r.ended || r.isReset))
	}
}

// closedConn is a readUntil condition: the server closed the connection.
func closedConn(ev *h2Events) bool { return ev.closed }

// rawUpstream is an HTTP/1.1 server that records the exact bytes of each
// request head it receives and answers 200 "ok".
type rawUpstream struct {
	ln  net.Listener
	mu  sync.Mutex
	got []string
}

func startRawUpstream(t *testing.T) *rawUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &rawUpstream{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

func (u *rawUpstream) addr() string { return u.ln.Addr().String() }

// serve reads one request: its head is recorded byte for byte, its body
// read by its framing; the answer closes the connection.
func (u *rawUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	var head strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		head.WriteString(line)
		if line == "\r\n" {
			break
		}
	}
	req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(strings.NewReader(head.String()), br)))
	if err != nil {
		return
	}
	io.Copy(io.Discard, req.Body)
	u.mu.Lock()
	u.got = append(u.got, head.String())
	u.mu.Unlock()
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
}

func (u *rawUpstream) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

// settleGoroutines waits until the goroutine count is back at base (a
// little slack for runtime helpers), failing after the deadline.
func settleGoroutines(t *testing.T, base int) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= base+2 },
		"goroutines did not return to the baseline %d (now %d)", base, runtime.NumGoroutine())
}
