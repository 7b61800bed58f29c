//go:build linux

package engine

import (
	"context"
	"errors"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

func TestParkAndDispatchAgain(t *testing.T) {
	t.Parallel()
	h := &lineHandler{}
	e := start(t, testConfig(), h)
	c := dial(t, e)
	roundTrip(t, c, "one")
	waitStats(t, e, "the connection to park", func(s Stats) bool { return s.Parked == 1 && s.Active == 0 })
	roundTrip(t, c, "two")
	if n := h.served.Load(); n != 2 {
		t.Errorf("served %d times, want 2", n)
	}
	c.Write([]byte("quit\n"))
	waitEOF(t, c)
	waitStats(t, e, "the connection to close", func(s Stats) bool { return s.Open == 0 && s.Parked == 0 })
}

func TestParkedHoldNoGoroutine(t *testing.T) {
	const n = 200
	e := start(t, testConfig(), &lineHandler{})
	base := runtime.NumGoroutine()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, e)
		roundTrip(t, conns[i], "hi")
	}
	waitStats(t, e, "every connection to park", func(s Stats) bool { return s.Parked == n })
	testutil.WaitFor(t, "serving goroutines to end", func() bool { return runtime.NumGoroutine() <= base+5 })
	for _, c := range conns {
		roundTrip(t, c, "again") // each is dispatched again
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.IdleTimeout = 200 * time.Millisecond
	e := start(t, cfg, &lineHandler{})
	c := dial(t, e)
	// The idle clock starts when the server parks the connection, after
	// it has read the request: a time taken before sending it is a bound
	// the client cannot overshoot. One taken after reading the answer can
	// be late by however long the client was descheduled, and on a loaded
	// machine the close then seems to come early.
	sent := time.Now()
	roundTrip(t, c, "x")
	waitEOF(t, c)
	if d := time.Since(sent); d < cfg.IdleTimeout {
		t.Errorf("closed after %v, before the idle timeout", d)
	}
	waitStats(t, e, "the connection to be forgotten", func(s Stats) bool { return s.Open == 0 })
}

func TestPeerCloseWhileParked(t *testing.T) {
	t.Parallel()
	e := start(t, testConfig(), &lineHandler{})
	c := dial(t, e)
	roundTrip(t, c, "x")
	waitStats(t, e, "the connection to park", func(s Stats) bool { return s.Parked == 1 })
	c.Close()
	waitStats(t, e, "the server side to close", func(s Stats) bool { return s.Open == 0 && s.Parked == 0 })
}

func TestMaxConns(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxConns = 2
	e := start(t, cfg, &lineHandler{})
	a, b := dial(t, e), dial(t, e)
	roundTrip(t, a, "a")
	roundTrip(t, b, "b")
	third := dial(t, e) // completes in the kernel backlog
	third.Write([]byte("c\n"))
	third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := third.Read(make([]byte, 1)); !errors.Is(err, syscall.EAGAIN) && !isTimeout(err) {
		t.Fatalf("the third connection was served over MaxConns: %v", err)
	}
	if s := e.Stats(); s.Open != 2 {
		t.Errorf("open = %d, want 2", s.Open)
	}
	a.Close()
	if got := readN(t, third, len("echo c\n")); got != "echo c\n" {
		t.Errorf("third got %q", got)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestAbortResets(t *testing.T) {
	t.Parallel()
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		if line == "abort" {
			c.Abort()
			return Close, true
		}
		return 0, false
	}}
	e := start(t, testConfig(), h)
	c := dial(t, e)
	c.Write([]byte("abort\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after Abort: %v, want a reset", err)
	}
}

func TestHandlerPanicCloses(t *testing.T) {
	t.Parallel()
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) { panic("boom") }}
	e := start(t, testConfig(), h)
	c := dial(t, e)
	c.Write([]byte("x\n"))
	waitEOF(t, c)
	waitStats(t, e, "the connection to close", func(s Stats) bool { return s.Open == 0 && s.Active == 0 })
}

func TestReusePortLoops(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ReusePort, cfg.AcceptLoops = true, 3
	e := start(t, cfg, &lineHandler{})
	if len(e.lns) != 3 {
		t.Fatalf("%d listening sockets, want 3", len(e.lns))
	}
	for _, ln := range e.lns[1:] {
		if ln.Addr().String() != e.Addr().String() {
			t.Errorf("socket on %v, want %v", ln.Addr(), e.Addr())
		}
	}
	for range 30 {
		roundTrip(t, dial(t, e), "x")
	}
}

func TestServeAfterShutdown(t *testing.T) {
	t.Parallel()
	e, err := Listen(testConfig(), &lineHandler{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Serve(); err != nil {
		t.Errorf("Serve after Shutdown = %v", err)
	}
	if err := e.Serve(); err == nil {
		t.Error("second Serve succeeded")
	}
	if _, err := net.Dial("tcp", e.Addr().String()); err == nil {
		t.Error("still listening after Shutdown")
	}
}

func TestListenError(t *testing.T) {
	t.Parallel()
	e := start(t, testConfig(), &lineHandler{})
	cfg := testConfig()
	cfg.Addr = e.Addr().String()
	if _, err := Listen(cfg, &lineHandler{}, nil); err == nil {
		t.Fatal("listening twice on one address succeeded")
	}
}
