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

func (l *loop) link(c *Conn) {
	c.prev, c.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = c
	} else {
		l.head = c
	}
	l.tail = c
	l.e.parked.Add(1)
}

func (l *loop) unlink(c *Conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		l.tail = c.prev
	}
	c.prev, c.next = nil, nil
	l.e.parked.Add(-1)
}

// sweep closes the connections parked before cutoff.
func (l *loop) sweep(cutoff time.Duration) {
	for _, c := range l.claim(cutoff) {
		c.Close()
	}
}

// claimIdle takes every parked connection off the loop, for shutdown.
func (l *loop) claimIdle() []*Conn {
	return l.claim(1<<63 - 1)
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
