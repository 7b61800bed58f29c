package engine

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// Accept errors other than a closed listener (EMFILE, ENFILE, ENOBUFS,
// ECONNABORTED, ...) are retried after a pause that doubles from
// minAcceptDelay to maxAcceptDelay, as net/http does.
const (
	minAcceptDelay = 5 * time.Millisecond
	maxAcceptDelay = time.Second
)

// acceptLoop accepts connections from ln until shutdown. A MaxConns slot
// is taken before each Accept, so that further clients wait in the
// kernel's backlog rather than in the process.
func (e *Engine) acceptLoop(ln *net.TCPListener, a *acceptor) {
	defer e.accepts.Done()
	defer func() {
		if v := recover(); v != nil {
			panics.Report("accept loop", v)
			e.fail(fmt.Errorf("accept loop panicked: %v", v))
		}
	}()
	accept := e.acceptGo
	if a != nil {
		accept = a.accept
	}
	var delay time.Duration
	for e.acquire() {
		err := accept(ln)
		if err == nil {
			delay = 0
			continue
		}
		e.unacquire()
		if errors.Is(err, net.ErrClosed) || e.shutting.Load() {
			return
		}
		delay = min(max(2*delay, minAcceptDelay), maxAcceptDelay)
		e.log.Warn("accept failed; retrying", "addr", ln.Addr().String(), "err", err, "delay", delay)
		if !e.pause(delay) {
			return
		}
	}
}

// acquire takes a MaxConns slot; false when shutdown began first.
func (e *Engine) acquire() bool {
	if e.sem == nil {
		return !e.shutting.Load()
	}
	select {
	case e.sem <- struct{}{}:
		return true
	case <-e.done:
		return false
	}
}

func (e *Engine) unacquire() {
	if e.sem != nil {
		<-e.sem
	}
}

// pause waits d; false when shutdown began first.
func (e *Engine) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.done:
		return false
	}
}

// acceptGo accepts one connection as a *net.TCPConn (Config.GoPoller)
// and adopts it.
func (e *Engine) acceptGo(ln *net.TCPListener) error {
	tc, err := ln.AcceptTCP()
	if err == nil {
		e.adopt(tc)
	}
	return err
}

// adopt registers a new *net.TCPConn on a loop and parks it: it is served
// when its first bytes arrive (at once, in practice, with DeferAccept).
func (e *Engine) adopt(tc *net.TCPConn) {
	e.open.Add(1)
	l := e.nextLoop()
	c := &Conn{Conn: tc, sock: tc, l: l}
	c.w.conn = c
	raw, err := tc.SyscallConn()
	if err != nil {
		c.Close()
		return
	}
	c.w.raw = raw
	if !e.noDelay.Load() {
		tc.SetNoDelay(false) // Go turns TCP_NODELAY on for every connection
	}
	l.add(&c.w)
	c.park()
}

// nextLoop picks the loop of a new connection, round-robin.
func (e *Engine) nextLoop() *loop { return e.loops[int(e.next.Add(1))%len(e.loops)] }
