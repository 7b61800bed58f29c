//go:build linux

package engine

import (
	"time"

	"golang.org/x/sys/unix"
)

// The idle list of a loop holds its parked connections in the order they
// parked. The idle timeout is the listener's, the same for all, so the
// oldest are at the head and a sweep stops at the first that is young
// enough: O(1) per connection, no timer per connection.

//
// A connection parked with a request begun (Conn.Hold) is on a second
// list, the held list, with a deadline of its own (the head timeout,
// from the head's first byte): the sweep scans that list whole. Its
// connections are few (slow clients) and each costs the scan a compare.

// list returns the ends of the list c belongs on: c.held does not change
// while c is linked (the handler sets and clears it while serving).
func (l *loop) list(c *Conn) (head, tail **Conn) {
	if c.held != nil {
		return &l.hhead, &l.htail
	}
	return &l.head, &l.tail
}

func (l *loop) link(c *Conn) {
	head, tail := l.list(c)
	c.prev, c.next = *tail, nil
	if *tail != nil {
		(*tail).next = c
	} else {
		*head = c
	}
	*tail = c
	l.e.parked.Add(1)
	if c.held != nil {
		l.e.held.Add(1)
	}
}

func (l *loop) unlink(c *Conn) {
	head, tail := l.list(c)
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		*head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		*tail = c.prev
	}
	c.prev, c.next = nil, nil
	l.e.parked.Add(-1)
	if c.held != nil {
		l.e.held.Add(-1)
	}
}

// sweep closes the connections parked before cutoff.
func (l *loop) sweep(cutoff time.Duration) {
	for _, c := range l.claim(cutoff) {
		c.Close()
	}
}

// sweepHeld closes the held connections whose deadline is past now.
func (l *loop) sweepHeld(now time.Duration) {
	l.mu.Lock()
	var out []*Conn
	for c := l.hhead; c != nil; {
		next := c.next
		if c.held.by <= now {
			l.unlink(c)
			c.w.state = stBusy
			out = append(out, c)
		}
		c = next
	}
	l.mu.Unlock()
	for _, c := range out {
		c.Close()
	}
}

// claimIdle takes every parked connection off the loop, for shutdown:
// the held ones too (their requests have not been read).
func (l *loop) claimIdle() []*Conn {
	out := l.claim(1<<63 - 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := l.hhead; c != nil; c = l.hhead {
		l.unlink(c)
		c.w.state = stBusy
		out = append(out, c)
	}
	return out
}

// claim takes the connections parked before cutoff off the idle list and
// marks them busy, so that no event dispatches them; the caller closes
// them (not under l.mu: Close waits for a RawConn.Control that may be
// waiting for l.mu).
func (l *loop) claim(cutoff time.Duration) []*Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*Conn
	for c := l.head; c != nil && c.parkedAt < cutoff; c = l.head {
		l.unlink(c)
		c.w.state = stBusy
		out = append(out, c)
	}
	return out
}

// owner is what a registered socket belongs to: a tunnel, or else a
// client connection.
type owner struct {
	c *Conn
	t *tunnel
}

// all lists the owners of every registered socket, for a forced shutdown.
func (l *loop) all() []owner {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []owner
	for _, w := range l.slots {
		if w != nil {
			out = append(out, owner{w.conn, w.tun})
		}
	}
	return out
}

func (o owner) close() {
	if o.t != nil {
		o.t.close()
	} else if o.c != nil {
		o.c.Close()
	}
}

// stop ends the loop: its goroutine exits at the wake-up and closes the
// fds; a loop that never ran closes them here.
func (l *loop) stop() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	l.stopped = true
	if l.running {
		one := [8]byte{1}
		unix.Write(l.wakefd, one[:]) // under l.mu: the fd is still ours
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.closeFDs()
}

// closeFDs closes the epoll instance under l.mu, so that no arm can use
// its number after it was reused.
func (l *loop) closeFDs() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	unix.Close(l.epfd)
	unix.Close(l.wakefd)
}
