//go:build linux

package engine

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// spliceSource serves payload on one connection and returns the
// receiving side's RawConn and conn.
func spliceSource(t *testing.T, payload []byte) *net.TCPConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(payload)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// TestSpliceFromClientThatReadsNothing: SpliceFrom moves a body from a
// socket to a client that reads nothing; it returns (after its grace)
// with what the client's socket did not take held in Rest, and the
// bytes moved, the bytes held and the rest still on the source make up
// the body, in order.
func TestSpliceFromClientThatReadsNothing(t *testing.T) {
	t.Parallel()
	payload := make([]byte, 16<<20)
	rand.Read(payload)
	src := spliceSource(t, payload)
	raw, err := src.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	type counts struct{ moved, held int64 }
	spliced := make(chan counts, 1)
	_, c := served(t, smallSendBuffer(), func(c *Conn) Action {
		res, err := c.SpliceFrom(raw, int64(len(payload)), nil, 20*time.Millisecond)
		spliced <- counts{res.Moved, res.Held}
		if err != nil {
			done <- err
			return Close
		}
		if res.Rest != nil {
			// What the pipe holds, then the rest of the source, the
			// usual way (Write waits for the client).
			b, err := io.ReadAll(res.Rest)
			res.Rest.Close()
			if err == nil {
				_, err = c.Write(b)
			}
			if err != nil {
				done <- err
				return Close
			}
		}
		_, err = io.CopyN(c, src, int64(len(payload))-res.Moved-res.Held)
		done <- err
		return Park
	})
	// The client reads nothing until the splice has given up on it.
	var n counts
	select {
	case n = <-spliced:
	case <-time.After(30 * time.Second):
		t.Fatal("SpliceFrom still waiting for a client that reads nothing after 30s")
	}
	if n.moved == 0 || n.moved+n.held >= int64(len(payload)) {
		t.Errorf("moved %d, held %d of %d: want some moved, then a stop for the full socket", n.moved, n.held, len(payload))
	}
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	b := make([]byte, len(payload))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, payload) {
		t.Fatal("the client's bytes are not the source's")
	}
}
