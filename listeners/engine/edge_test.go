//go:build linux

package engine

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// edgeTimeout bounds each wait of these tests, long enough for a loaded
// machine.
const edgeTimeout = 30 * time.Second

// chunkHandler reads what each dispatch finds with TryRead into a buffer
// of size bytes, appends it to got, and parks; end of stream closes and
// closes done. busy, when set, runs after each read, before parking.
type chunkHandler struct {
	size int
	busy func(c *Conn)

	mu   sync.Mutex
	got  strings.Builder
	done chan struct{}
}

func newChunkHandler(size int) *chunkHandler {
	return &chunkHandler{size: size, done: make(chan struct{})}
}

func (h *chunkHandler) Serve(c *Conn) Action {
	buf := make([]byte, h.size)
	n, err := c.TryRead(buf)
	switch {
	case n > 0:
		h.mu.Lock()
		h.got.Write(buf[:n])
		h.mu.Unlock()
		if h.busy != nil {
			h.busy(c)
		}
		return Park
	case errors.Is(err, syscall.EAGAIN):
		return Park
	}
	close(h.done)
	return Close
}

func (h *chunkHandler) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got.String()
}

// waitDone waits for the handler to see the client's end of stream, with
// all of want read before it.
func (h *chunkHandler) waitDone(t *testing.T, want string) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(edgeTimeout):
		t.Fatalf("the end of stream was never dispatched; read %q of %q", h.text(), want)
	}
	if got := h.text(); got != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// TestEdgeBytesAndEndTogether: bytes and the end of stream arrive at
// once; the read that takes the bytes is short but stops at the end, so
// the socket is not drained: parking must still dispatch it again, for
// the end of stream. Many connections, so that both orders of the loop's
// event and the read occur.
func TestEdgeBytesAndEndTogether(t *testing.T) {
	for i := range 50 {
		h := newChunkHandler(64)
		e := start(t, testConfig(), h)
		c := dial(t, e)
		c.Write([]byte("hello"))
		c.CloseWrite()
		h.waitDone(t, "hello")
		if t.Failed() {
			t.Fatalf("connection %d", i)
		}
	}
}

// TestEdgeFullReadParksForMore: a read that fills its buffer leaves the
// rest in the socket; the connection is dispatched again until all of it
// is read, with no new bytes to bring an edge.
func TestEdgeFullReadParksForMore(t *testing.T) {
	h := newChunkHandler(4)
	e := start(t, testConfig(), h)
	c := dial(t, e)
	msg := "0123456789abcdefghij"
	c.Write([]byte(msg))
	testutil.WaitFor(t, "all bytes read", func() bool { return h.text() == msg })
	c.CloseWrite()
	h.waitDone(t, msg)
}

// TestEdgeWhileServedIsKept: bytes that arrive while the connection is
// being served (after its read, before it parks) bring their edge then;
// the connection parks without asking the kernel again and must still be
// dispatched for them.
func TestEdgeWhileServedIsKept(t *testing.T) {
	h := newChunkHandler(64)
	c := make(chan net.Conn, 1)
	sent := make(chan struct{})
	first := true
	h.busy = func(sc *Conn) {
		if first { // runs on one dispatch at a time
			first = false
			cl := <-c
			cl.Write([]byte(" world"))
			// The loop has seen the edge while the connection is served.
			if !testutil.Poll(edgeTimeout, func() bool { return sc.w.ev.Load()&evIn != 0 }) {
				t.Error("the loop never recorded the edge")
			}
			close(sent)
		}
	}
	e := start(t, testConfig(), h)
	cl := dial(t, e)
	cl.Write([]byte("hello"))
	c <- cl
	<-sent
	testutil.WaitFor(t, "the second write read", func() bool { return h.text() == "hello world" })
	cl.CloseWrite()
	h.waitDone(t, "hello world")
}

// TestEdgeReadThenWaitingRead: a handler that keeps reading with Read
// (waiting in between) sees bytes written one at a time: each wait ends
// at the next edge.
func TestEdgeReadThenWaitingRead(t *testing.T) {
	got := make(chan string, 1)
	e := start(t, testConfig(), handlerFunc(func(c *Conn) Action {
		c.SetReadDeadline(time.Now().Add(edgeTimeout))
		b, err := io.ReadAll(c)
		if err != nil {
			got <- "error: " + err.Error()
		} else {
			got <- string(b)
		}
		return Close
	}))
	c := dial(t, e)
	want := ""
	for i := range 20 {
		s := string(rune('a' + i))
		c.Write([]byte(s))
		want += s
	}
	c.CloseWrite()
	select {
	case s := <-got:
		if s != want {
			t.Fatalf("read %q, want %q", s, want)
		}
	case <-time.After(edgeTimeout + time.Second):
		t.Fatal("the handler's reads never ended")
	}
}
