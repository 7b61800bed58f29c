//go:build linux

package engine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// lineHandler answers each line "x" with "echo x" and parks; "quit"
// closes. hook, when set, sees each line first and may take it over. A
// dispatch with nothing to read (a stale readiness report) parks again.
type lineHandler struct {
	served atomic.Int64
	hook   func(c *Conn, line string) (Action, bool)
}

func (h *lineHandler) Serve(c *Conn) Action {
	h.served.Add(1)
	buf := make([]byte, 512)
	n, err := c.TryRead(buf)
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return Park
	case err != nil || n == 0:
		return Close
	}
	line := strings.TrimSpace(string(buf[:n]))
	if h.hook != nil {
		if a, ok := h.hook(c, line); ok {
			return a
		}
	}
	if line == "quit" {
		return Close
	}
	c.Write([]byte("echo " + line + "\n"))
	return Park
}

// testConfig listens on a free loopback port with no deferred accept (a
// test client that sends nothing is accepted at once).
func testConfig() Config {
	return Config{Addr: "127.0.0.1:0", NoDelay: true, Loops: 2}
}

// start runs an engine until the test ends.
func start(t testing.TB, cfg Config, h Handler) *Engine {
	t.Helper()
	e, err := Listen(cfg, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- e.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

func dial(t testing.TB, e *Engine) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", e.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// roundTrip sends line and checks the echo.
func roundTrip(t testing.TB, c net.Conn, line string) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "echo "+line+"\n" {
		t.Fatalf("answer to %q = %q, %v", line, got, err)
	}
}

// readN reads exactly n bytes within 5s.
func readN(t testing.TB, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("reading %d bytes: %v (got %q)", n, err, buf)
	}
	return string(buf)
}

// waitEOF waits up to 5s for the peer to close c.
func waitEOF(t testing.TB, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("waiting for EOF: read %d bytes, then %v", n, err)
	}
}

func waitStats(t testing.TB, e *Engine, what string, cond func(Stats) bool) {
	t.Helper()
	testutil.WaitFor(t, what, func() bool { return cond(e.Stats()) })
}
