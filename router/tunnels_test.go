package router

import (
	"net"
	"sync/atomic"
	"testing"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// TestTunnelDrainEndsEitherOrder: a reload's drain ends a tunnel through
// the end its front end gave, whether the drain comes after the tunnel
// started or between the socket's handover and the start (when closing
// the wrapper no longer closes the socket).
func TestTunnelDrainEndsEitherOrder(t *testing.T) {
	for _, drainFirst := range []bool{false, true} {
		r := &Router{}
		up, _ := tcpPair(t)
		c := r.track(up, tunnelKey{route: "ws"}, tunnelInfo{}).(*tunnelConn)
		if c.TunnelSocket() != up {
			t.Fatal("the wrapper did not hand its socket over")
		}
		var ended atomic.Int32
		end := func() { ended.Add(1) }
		if drainFirst {
			c.drain()
			c.TunnelStarted(end)
		} else {
			c.TunnelStarted(end)
			c.drain()
		}
		if n := ended.Load(); n != 1 {
			t.Errorf("drain first %v: the tunnel was ended %d times, want 1", drainFirst, n)
		}
	}
}
