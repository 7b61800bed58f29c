package router

import (
	"errors"
	"io"
	"sync"
	"time"
)

// A request body is copied to the upstream on a goroutine other than the
// handler's: the HTTP/1.1 client's body writer, or x/net's HTTP/2 client
// writer, which may still be reading when the response has ended (the
// server answered before it read the body, the client cancelled). What it
// reads, the front end's body and the exchange's own buffers, is pooled
// and reused by the next request once the handler returns. So the body
// reaches the upstream client only through a bodyGate, one per try, and
// the exchange ends only once its gates are closed: no read is in
// progress and none will touch what lies behind the gate again.

// errBodyStopped is what a gate's Read returns once the exchange ended.
var errBodyStopped = errors.New("request body: the exchange has ended")

// bodyJoinWait bounds how long the end of an exchange waits for a body
// read in progress after interrupting it (a read deadline in the past ends
// it at once on every front end; the bound only guards against one that
// ignores it).
const bodyJoinWait = 5 * time.Second

// bodyGate is the request body as one try's upstream writer reads it.
type bodyGate struct {
	r io.Reader

	mu      sync.Mutex
	reading bool          // a Read is inside r.Read
	closed  bool          // Read fails without touching r
	idle    chan struct{} // made by close while a Read is in progress; closed when it returns
}

// Read reads from r unless the gate is closed.
func (g *bodyGate) Read(p []byte) (int, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return 0, errBodyStopped
	}
	g.reading = true
	g.mu.Unlock()
	defer g.leave() // also when r panics: a recovered panic must not leave close waiting
	return g.r.Read(p)
}

func (g *bodyGate) leave() {
	g.mu.Lock()
	g.reading = false
	if g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	g.mu.Unlock()
}

// readDeadliner is what close interrupts a blocked read with: the client
// connection's (or stream's) read deadline, through its ResponseWriter.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// close shuts the gate and waits for a Read in progress to return, first
// setting rd's read deadline to now (when rd is not nil) to unblock it. It
// reports false when the read did not return within bodyJoinWait: what
// lies behind the gate is still in use then and must not be reused.
func (g *bodyGate) close(rd readDeadliner) bool {
	g.mu.Lock()
	g.closed = true
	if !g.reading {
		g.mu.Unlock()
		return true
	}
	idle := make(chan struct{})
	g.idle = idle
	g.mu.Unlock()
	if rd != nil {
		_ = rd.SetReadDeadline(time.Now())
	}
	t := time.NewTimer(bodyJoinWait)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}
