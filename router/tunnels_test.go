package router

import (
	"sync/atomic"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestTunnelDrainEndsEitherOrder: a reload's drain ends a tunnel through
// the end its front end gave, whether the drain comes after the tunnel
// started or between the socket's handover and the start (when closing
// the wrapper no longer closes the socket).
func TestTunnelDrainEndsEitherOrder(t *testing.T) {
	for _, drainFirst := range []bool{false, true} {
		r := &Router{}
		up, _ := testutil.TCPPair(t)
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
