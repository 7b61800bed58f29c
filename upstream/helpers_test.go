package upstream

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// backend is a real HTTP server on loopback that a test can kill and
// restart on the same port, make hang, reset connections or answer 503.
type backend struct {
	t    testing.TB
	addr string
	mode atomic.Int32 // modeOK, mode503, modeHang, modeReset

	mu  sync.Mutex
	srv *http.Server
	ln  net.Listener
}

const (
	modeOK int32 = iota
	mode503
	modeHang
	modeReset
)

func newBackend(t testing.TB) *backend {
	b := &backend{t: t}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = ln.Addr().String()
	b.serve(ln)
	t.Cleanup(b.kill)
	return b
}

func (b *backend) serve(ln net.Listener) {
	hang := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch b.mode.Load() {
		case mode503:
			w.WriteHeader(503)
		case modeHang:
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		case modeReset:
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}
		default:
			io.WriteString(w, "ok")
		}
	})}
	srv.RegisterOnShutdown(func() { close(hang) })
	b.mu.Lock()
	b.srv, b.ln = srv, ln
	b.mu.Unlock()
	go srv.Serve(ln)
}

// kill closes the listener and every connection, as a crashed process.
func (b *backend) kill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		b.srv.Close()
		b.srv = nil
	}
}

// restart listens on the same address again.
func (b *backend) restart() {
	ln, err := net.Listen("tcp", b.addr)
	if err != nil {
		b.t.Fatalf("restart %s: %v", b.addr, err)
	}
	b.serve(ln)
}

// poolConf is an upstream over addrs with short timeouts.
func poolConf(addrs ...string) conf.Upstream {
	c := conf.DefaultUpstream("u")
	c.ConnectTimeout, c.ResponseTimeout = 500*time.Millisecond, 2*time.Second
	for _, a := range addrs {
		c.Servers = append(c.Servers, conf.Server{Addr: a, Weight: 1})
	}
	return c
}

// clock is a settable time for pools under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testPool builds a pool with a seeded random source, the test's log and
// now as its clock (time.Now when nil), and starts its checks.
func testPool(t testing.TB, cfg conf.Upstream, now func() time.Time) *Pool {
	p := uncheckedPool(t, cfg, now)
	p.startChecks()
	return p
}

// uncheckedPool is testPool without the active health-check loops, for a
// test that feeds check results itself (reportCheck): a loop's first
// check runs at once, whatever the interval, and would race with it.
func uncheckedPool(t testing.TB, cfg conf.Upstream, now func() time.Time) *Pool {
	if now == nil {
		now = time.Now
	}
	g := new(group)
	rnd := rand.New(rand.NewPCG(1, 2))
	var rmu sync.Mutex
	p := newPool(cfg, g, slog.New(slog.NewTextHandler(testWriter{t}, nil)), now,
		func() uint64 { rmu.Lock(); defer rmu.Unlock(); return rnd.Uint64() },
		func(string) *ServerState { return newServerState(g, now(), true) })
	t.Cleanup(func() {
		p.Close()
		p.waitChecks(5 * time.Second)
	})
	return p
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", b)
	return len(b), nil
}

// roundTrip sends one GET through the pool as the router would and
// reports the result to Done.
func roundTrip(p *Pool) (*Server, Result, error) {
	s, err := p.Pick(nil, nil)
	if err != nil {
		return nil, Result{}, err
	}
	start := time.Now()
	r := Result{}
	resp, err := p.Transport().RoundTrip(httptest.NewRequest("GET", "http://"+s.Addr+"/", nil))
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.Status = resp.StatusCode
	} else {
		r.Outcome, r.ConnectFailed = Failure, httpclient.IsConnectError(err)
	}
	r.Latency = time.Since(start)
	s.Done(r)
	return s, r, err
}

// load runs n clients through p until stop is closed; it counts errors.
func load(p *Pool, n int, stop <-chan struct{}, failed *atomic.Int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, r, err := roundTrip(p); err != nil || r.Status >= 500 {
					if !errors.Is(err, ErrNoServer) {
						failed.Add(1)
					}
				}
			}
		})
	}
	return &wg
}

// stateOf returns the state of the server at addr.
func stateOf(p *Pool, addr string) ServerStatus {
	for _, s := range p.Status().Servers {
		if s.Addr == addr {
			return s
		}
	}
	return ServerStatus{}
}
