// Package peektest holds test helpers for code built on package peek:
// loopback TCP pairs and a writer that sends a stream in parts, each only
// once the peeking side has seen the ones before, so that tests of
// waiting after a short peek are deterministic without sleeping.
package peektest

import (
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Pair returns the two ends of a TCP connection over 127.0.0.1. Both are
// closed when the test ends.
func Pair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	client, err = net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.AcceptTCP()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// Raw returns c's syscall.RawConn.
func Raw(t testing.TB, c *net.TCPConn) syscall.RawConn {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatalf("SyscallConn: %v", err)
	}
	return rc
}

// stepTimeout bounds how long the writer waits for the peeker to catch up;
// reaching it is a test failure, not a timing assumption.
const stepTimeout = 10 * time.Second

// Feed writes parts to c from a goroutine: the first at once, each next
// one only after the returned observer has been called with at least all
// the bytes written so far; then, if then is not nil, once the peeker has
// seen everything, it calls then (e.g. to close or half-close c). Pass the
// observer to the code under test so that it is called with every
// prefix it peeks. A peeker that stops early (an error, a full buffer)
// leaves the writer waiting until the test ends, which is not a failure.
func Feed(t testing.TB, c *net.TCPConn, then func(), parts ...[]byte) (seen func(b []byte)) {
	t.Helper()
	var got atomic.Int64
	wake := make(chan struct{}, 1)
	seen = func(b []byte) {
		got.Store(int64(len(b)))
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		<-done
	})
	go func() {
		defer close(done)
		sent := 0
		for i, p := range parts {
			if _, err := c.Write(p); err != nil {
				t.Errorf("feed: write: %v", err)
				return
			}
			sent += len(p)
			if i == len(parts)-1 && then == nil {
				return
			}
			switch waitSeen(&got, wake, stop, sent) {
			case stopped:
				return
			case timedOut:
				t.Errorf("feed: the peeker never saw %d bytes (saw %d)", sent, got.Load())
				return
			}
		}
		if then != nil {
			then()
		}
	}()
	return seen
}

const (
	sawAll = iota
	stopped
	timedOut
)

// waitSeen waits until got reaches n, the test ends (stop) or
// stepTimeout passes.
func waitSeen(got *atomic.Int64, wake, stop <-chan struct{}, n int) int {
	timer := time.NewTimer(stepTimeout)
	defer timer.Stop()
	for got.Load() < int64(n) {
		select {
		case <-wake:
		case <-stop:
			return stopped
		case <-timer.C:
			return timedOut
		}
	}
	return sawAll
}
