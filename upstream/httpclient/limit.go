package httpclient

import (
	"context"
	"sync"
	"time"
)

// LimitError is a request refused by a pool limit (conf.Upstream
// MaxConnections and MaxPending): the pool is busy, the server is not at
// fault.
type LimitError struct {
	// Limit names the limit: "max_connections" (no connection freed up
	// within the connect timeout) or "max_pending" (too many requests
	// already waiting for one).
	Limit string
}

func (e *LimitError) Error() string { return "upstream pool limit reached: " + e.Limit }

// limiter counts a pool's open upstream connections against
// max_connections and the requests waiting for one against max_pending.
// A request that finds no idle connection and no free slot waits until a
// connection is released or pooled, at most the connect timeout.
type limiter struct {
	maxConns, maxPending int

	mu      sync.Mutex
	open    int           // connections holding a slot
	pending int           // requests waiting
	wake    chan struct{} // closed (and replaced) when a slot frees or a connection is pooled
}

func newLimiter(maxConns, maxPending int) *limiter {
	if maxConns <= 0 {
		return nil
	}
	return &limiter{maxConns: maxConns, maxPending: maxPending, wake: make(chan struct{})}
}

// current returns the channel the next release or pooling closes; taken
// before looking for a connection, so that no wake-up is missed.
func (l *limiter) current() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wake
}

// acquire takes a slot for a new connection if one is free.
func (l *limiter) acquire() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.maxConns {
		return false
	}
	l.open++
	return true
}

// release frees a slot.
func (l *limiter) release() {
	l.mu.Lock()
	l.open--
	l.broadcast()
	l.mu.Unlock()
}

// pooled says a connection went back to an idle stack.
func (l *limiter) pooled() {
	l.mu.Lock()
	l.broadcast()
	l.mu.Unlock()
}

func (l *limiter) broadcast() {
	if l.pending > 0 {
		close(l.wake)
		l.wake = make(chan struct{})
	}
}

// enter counts a waiting request; false when max_pending are waiting
// already (0: no request may wait).
func (l *limiter) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending >= l.maxPending {
		return false
	}
	l.pending++
	return true
}

func (l *limiter) leave() {
	l.mu.Lock()
	l.pending--
	l.mu.Unlock()
}

// waiter is one request's wait for a connection, made when it first has
// to wait: the connect timeout bounds all of its waiting.
type waiter struct {
	lim   *limiter
	timer *time.Timer
	in    bool // counted in lim.pending
}

func newWaiter(t *Transport) *waiter {
	w := &waiter{lim: t.lim}
	if t.connTimeout > 0 {
		w.timer = time.NewTimer(t.connTimeout)
	}
	return w
}

// on waits until wake closes, the connect timeout passes or ctx ends.
func (w *waiter) on(ctx context.Context, wake chan struct{}) error {
	if !w.in {
		if !w.lim.enter() {
			return &LimitError{Limit: "max_pending"}
		}
		w.in = true
	}
	var timeout <-chan time.Time
	if w.timer != nil {
		timeout = w.timer.C
	}
	select {
	case <-wake:
		return nil
	case <-timeout:
		return &LimitError{Limit: "max_connections"}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stop ends the wait; a nil waiter did not wait.
func (w *waiter) stop() {
	if w == nil {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.in {
		w.lim.leave()
	}
}
