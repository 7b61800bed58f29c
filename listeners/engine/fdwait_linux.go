//go:build linux

package engine

import (
	"net"
	"os"
	"sync"
	"time"
)

// How a call on an fdConn waits: it registers with the loop what it waits
// for (loop.await), then blocks on its direction's channel, which the
// loop, a Close or a deadline change sends a token on; a deadline adds a
// timer. The syscall.RawConn of the socket waits the same way.

// The two directions of a wait.
const (
	dirRead  = 0
	dirWrite = 1
)

// waiter is what a goroutine blocked on an fdConn waits on. It is made
// (from a pool) the first time a call has to wait, and given back when the
// connection parks, so a parked connection holds none (unless a call on
// another goroutine is still under way then: dropWaiter).
type waiter struct {
	ch [2]chan struct{} // one token per wake-up, per direction
	t  [2]*time.Timer   // deadline timers, made on the first wait under a deadline
}

var waiters = sync.Pool{New: func() any {
	return &waiter{ch: [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}}
}}

// wake tells a call waiting in direction dir to look again.
func (s *fdConn) wake(dir int) {
	if w := s.wt.Load(); w != nil {
		select {
		case w.ch[dir] <- struct{}{}:
		default:
		}
	}
}

// dropWaiter gives the waiter back when the connection parks, unless a
// call is still in do on another goroutine (a write the handler left
// running, say): such a call may be waiting on it, and only it can be
// woken through it; the waiter then stays until a later park. The calls
// hold their direction's lock throughout. A wake that loaded the waiter
// before the swap may still leave a token in it: the next user's wait
// returns early once, and its caller tries again.
func (s *fdConn) dropWaiter() {
	if s.wt.Load() == nil {
		return
	}
	if !s.mu[dirRead].TryLock() {
		return
	}
	defer s.mu[dirRead].Unlock()
	if !s.mu[dirWrite].TryLock() {
		return
	}
	defer s.mu[dirWrite].Unlock()
	if w := s.wt.Swap(nil); w != nil {
		for _, ch := range w.ch { // a token left over would wake the next user for nothing
			select {
			case <-ch:
			default:
			}
		}
		waiters.Put(w)
	}
}

// expired returns the error of direction dir's deadline when it passed.
func (s *fdConn) expired(dir int) error {
	if d := s.dl[dir].Load(); d != 0 && time.Now().UnixNano() >= d {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// wait blocks until the loop reports the socket ready in direction dir,
// the deadline passes, the deadline changes or the connection closes. The
// caller holds a reference and retries its call after a nil return.
func (s *fdConn) wait(dir int) error {
	w := s.wt.Load()
	if w == nil {
		w = waiters.Get().(*waiter)
		if !s.wt.CompareAndSwap(nil, w) {
			waiters.Put(w)
			w = s.wt.Load()
		}
	}
	if s.closing.Load() { // after wt is set: a Close either sees it or is seen
		return net.ErrClosed
	}
	if err := s.expired(dir); err != nil {
		return err
	}
	ready, err := s.w.loop().await(s.w, dir, int(s.fd))
	if err != nil || ready {
		return err
	}
	d := s.dl[dir].Load()
	if d == 0 {
		<-w.ch[dir]
		return nil
	}
	t := w.t[dir]
	if t == nil {
		t = time.NewTimer(time.Until(time.Unix(0, d)))
		w.t[dir] = t
	} else {
		t.Reset(time.Until(time.Unix(0, d)))
	}
	select {
	case <-w.ch[dir]:
		t.Stop()
	case <-t.C:
	}
	return nil
}

// startBits are the bits of watch.ev a try in each direction clears before
// its system call: the edges it will see for itself, and for a read what
// the last one knew of the socket being drained.
var startBits = [2]uint32{evIn | evDrained, evOut}

// do runs op on the descriptor until it does not return EAGAIN, waiting
// for readiness in between; op is tried once even when it would block.
// What op found is unknown to the engine: a read through it leaves the
// socket not known to be drained (fdConn.Read and readNow say more).
func (s *fdConn) do(dir int, op func(fd int) bool) error {
	s.mu[dir].Lock()
	defer s.mu[dir].Unlock()
	if !s.incref() {
		return net.ErrClosed
	}
	defer s.decref()
	for {
		if err := s.expired(dir); err != nil {
			return err
		}
		s.w.ev.And(^startBits[dir])
		if op(int(s.fd)) {
			return nil
		}
		if s.closing.Load() {
			return net.ErrClosed
		}
		if err := s.wait(dir); err != nil {
			return err
		}
	}
}

// fdRaw is an fdConn's syscall.RawConn.
type fdRaw fdConn

// Control runs f with the descriptor, which stays open meanwhile.
func (r *fdRaw) Control(f func(fd uintptr)) error {
	s := (*fdConn)(r)
	return s.control(func(fd int) error { f(uintptr(fd)); return nil })
}

// Read calls f until it returns true, waiting for the socket to be
// readable in between (under the read deadline).
func (r *fdRaw) Read(f func(fd uintptr) bool) error {
	s := (*fdConn)(r)
	if err := s.do(dirRead, func(fd int) bool { return f(uintptr(fd)) }); err != nil {
		return s.opErr("raw-read", err)
	}
	return nil
}

// Write calls f until it returns true, waiting for the socket to be
// writable in between (under the write deadline).
func (r *fdRaw) Write(f func(fd uintptr) bool) error {
	s := (*fdConn)(r)
	if err := s.do(dirWrite, func(fd int) bool { return f(uintptr(fd)) }); err != nil {
		return s.opErr("raw-write", err)
	}
	return nil
}
