package http1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestSlowHeadsHoldNoGoroutine: connections whose heads have begun and
// not ended wait parked, their bytes held by the engine, with no Serve
// call (goroutine) running for them; each is served once its head ends.
func TestSlowHeadsHoldNoGoroutine(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, okHandler())
	const n = 50
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, ts)
		io.WriteString(conns[i], "GET /slow HTTP/1.1\r\nHo")
	}
	testutil.WaitFor(t, "every begun head held", func() bool {
		st := ts.e.Stats()
		return st.Held == n && st.Active == 0
	})
	for i, c := range conns {
		io.WriteString(c, "st: a\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(ioTimeout))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		if body := bodyOf(res); res.StatusCode != 200 || body != "HTTP/1.1 /slow" {
			t.Fatalf("connection %d: %d %q, want 200 HTTP/1.1 /slow", i, res.StatusCode, body)
		}
	}
	if st := ts.e.Stats(); st.Held != 0 {
		t.Errorf("%d connections still held after their heads ended", st.Held)
	}
}

// TestSlowHeadTrickleCut: a head that keeps coming a byte at a time is
// cut at read_header_timeout from its first byte: each wake-up does not
// give it a new deadline.
func TestSlowHeadTrickleCut(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{ReadHeaderTimeout: 300 * time.Millisecond}, okHandler())
	c := dial(t, ts)
	begin := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\n")
	closed := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		closed <- err
	}()
	tick := time.NewTicker(50 * time.Millisecond) // pacing the sender, not waiting for an event
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case err := <-closed:
			if !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("read: %v, want the connection closed", err)
			}
			if d := time.Since(begin); d < 250*time.Millisecond || d > 10*time.Second {
				t.Fatalf("closed after %v, want about read_header_timeout (300ms, swept within a second)", d)
			}
			return
		case <-tick.C:
			io.WriteString(c, "X")
		case <-deadline:
			t.Fatal("a trickled head was never cut")
		}
	}
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
