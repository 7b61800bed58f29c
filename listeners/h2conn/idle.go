package h2conn

import (
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// idleList holds a server's parked connections in the order they
// parked, for their idle timeout: the timeout is the server's, the same
// for all, so one timer serves them all (a timer each would cost a
// parked connection about 120 bytes more). Park order is not the order
// of their idle times: a connection served for a frame that opens no
// stream (a PING, a SETTINGS) parks again, at the tail, with the idle
// time it had, and one whose writer took long parks after others that
// went idle later. So the sweep looks at every one.
type idleList struct {
	s          *Server
	mu         sync.Mutex
	head, tail *conn
	timer      *time.Timer // runs while the list is not empty
	armed      bool
}

// idleMargin is how much before the idle timeout a parked connection's
// GOAWAY goes out: the engine closes parked connections idle that long
// itself, without a GOAWAY, and this side must come first.
func idleMargin(t time.Duration) time.Duration { return min(t/16, 250*time.Millisecond) }

// sweepEvery is how often the list is looked at: within the margin, so a
// connection gets its GOAWAY between the margin and half of it before
// its idle timeout.
func sweepEvery(t time.Duration) time.Duration { return max(idleMargin(t)/2, time.Millisecond) }

// link puts a connection that parks at the tail; c.mu is held.
func (l *idleList) link(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.prevIdle, c.nextIdle, c.inIdle = l.tail, nil, true
	if l.tail != nil {
		l.tail.nextIdle = c
	} else {
		l.head = c
	}
	l.tail = c
	if !l.armed {
		l.armed = true
		d := sweepEvery(l.s.cfg.IdleTimeout)
		if l.timer == nil {
			l.timer = time.AfterFunc(d, l.sweep)
		} else {
			l.timer.Reset(d)
		}
	}
}

// unlink takes c off the list when it is on it; c.mu is held.
func (l *idleList) unlink(c *conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.inIdle {
		return
	}
	if c.prevIdle != nil {
		c.prevIdle.nextIdle = c.nextIdle
	} else {
		l.head = c.nextIdle
	}
	if c.nextIdle != nil {
		c.nextIdle.prevIdle = c.prevIdle
	} else {
		l.tail = c.prevIdle
	}
	c.prevIdle, c.nextIdle, c.inIdle = nil, nil, false
}

// sweep ends the parked connections whose idle timeout (less the margin)
// has passed: each is claimed and sent its GOAWAY on a goroutine of its
// own (its close lingers up to a second).
func (l *idleList) sweep() {
	defer panics.Recover("h2 idle sweep")
	t := l.s.cfg.IdleTimeout
	cutoff := time.Since(epoch) - t + idleMargin(t)
	var due []*conn
	l.mu.Lock()
	for c := l.head; c != nil; c = c.nextIdle {
		if time.Duration(c.idleSince.Load()) <= cutoff {
			due = append(due, c)
		}
	}
	l.armed = l.head != nil
	if l.armed {
		l.timer.Reset(sweepEvery(t))
	}
	l.mu.Unlock()
	// Not under l.mu: a connection's lock comes first (link, unlink).
	for _, c := range due {
		c.mu.Lock()
		// It may have been served and parked again since: look again.
		claimed := time.Duration(c.idleSince.Load()) <= cutoff && c.claimParkedLocked()
		c.mu.Unlock()
		if claimed {
			panics.Go("h2 idle goaway", func() { c.endClaimed(codeNo) })
		}
	}
}
