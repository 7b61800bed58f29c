//go:build linux

package engine

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/edgeway/edgeway/internal/panics"
)

// A loop is one epoll instance and the goroutine that waits on it.
//
// The engine's own sockets (fdConn: accepted clients, a tunnel's adopted
// upstream side) are registered once, edge-triggered, for reading (and
// for writing from the first write that waits), as Go's own poller
// registers a net.Conn: an event records what the socket has (watch.ev:
// evIn, evOut, evHup), dispatches a parked connection, and wakes a call
// waiting on the socket (fdConn.wait), so that parking and waiting cost
// no epoll_ctl(2). What an edge leaves for
// later is kept in watch.ev: each read or write clears its direction's
// bit before its system call, so an edge that comes after the call saw
// the socket is never lost. A reader that saw the socket drained (a read
// shorter than its buffer, or EAGAIN: evDrained) lets the connection park
// with nothing more; otherwise (more may be waiting, or a read the engine
// did not see, through RawConn) parking asks the kernel again with an
// EPOLL_CTL_MOD, which reports the socket at once when it has bytes.
//
// A *net.TCPConn (Config.GoPoller, a tunnel's TLS upstream side) is read
// by Go's net package, which the engine cannot follow: it is registered
// with EPOLLONESHOT, an event disarms it, and it is armed again for what
// is still waited for.
type loop struct {
	e      *Engine
	epfd   int
	wakefd int // an eventfd that interrupts EpollWait for stop

	mu         sync.Mutex
	slots      []*watch // registered sockets by idx-1; the force-close registry
	free       []uint32 // free slot indexes
	gen        uint32
	head, tail *Conn // parked connections, oldest first
	hhead      *Conn // parked connections with a request begun (Conn.Hold)
	htail      *Conn
	running    bool              // run was started
	buf        [inlineBurst]byte // tunnel bytes copied on the loop goroutine
	stopped    bool              // no more arming; the epoll fd is (being) closed
}

// wakeSlot is the event data of the wake eventfd.
const wakeSlot = -1

// The bits of watch.waits.
const (
	waitIn  uint8 = 1 << dirRead
	waitOut uint8 = 1 << dirWrite
)

// Events that end a wait in each direction.
const (
	inReady  = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLERR | unix.EPOLLHUP
	outReady = unix.EPOLLOUT | unix.EPOLLERR | unix.EPOLLHUP
)

// The bits of watch.ev, for a socket registered edge-triggered.
const (
	evIn      uint32 = 1 << dirRead  // an edge for reading came since the last read began
	evOut     uint32 = 1 << dirWrite // an edge for writing came since the last write began
	evDrained uint32 = 4             // the last read saw the socket empty (short, or EAGAIN)
	evHup     uint32 = 8             // the peer half-closed, or an error: stays
)

// hupEvents end the stream. A read shorter than its buffer stops at the
// end of stream and does not say the socket is drained: once one came,
// parking always asks the kernel again (loop.arm).
const hupEvents = unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR

// events is what w's registration must be armed for. An edge-triggered
// one: readable and peer half-closed, and writable once a write had to
// wait (regOut; it stays, as a socket is writable nearly always and each
// modification would report it). A one-shot one: readable and peer half-closed
// to be dispatched or for a waiting read, writable for a waiting write
// (EPOLLERR and EPOLLHUP are always reported), one event per arming; 0:
// nothing.
func (w *watch) events() uint32 {
	if w.reg&regET != 0 {
		ev := uint32(unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET)
		if w.reg&regOut != 0 {
			ev |= unix.EPOLLOUT
		}
		return ev
	}
	var ev uint32
	if w.state == stArmed || w.waits&waitIn != 0 {
		ev |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if w.waits&waitOut != 0 {
		ev |= unix.EPOLLOUT
	}
	if ev != 0 {
		ev |= unix.EPOLLONESHOT
	}
	return ev
}

var errStopped = errors.New("event loop stopped")

func newLoop(e *Engine) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating epoll instance: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("creating eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, fmt.Errorf("registering eventfd: %w", err)
	}
	return &loop{e: e, epfd: epfd, wakefd: wakefd}, nil
}

// start runs the loop goroutine (called once, under e.mu).
func (l *loop) start() {
	l.mu.Lock()
	l.running = true
	l.mu.Unlock()
	l.e.loopsWG.Add(1)
	go l.run()
}

// run waits for events and dispatches them; between waits it closes the
// parked connections past the idle timeout.
//
// The loop goroutine does not block in epoll_wait(2): that would hold an
// OS thread in a system call, and with few Ps the goroutines it starts
// would wait for sysmon to take the P back (tens of microseconds a wake-
// up). Instead a duplicate of the epoll fd is registered in Go's own
// poller, which reports it readable when events are ready; the loop then
// collects them with a non-blocking epoll_wait and parks like any other
// goroutine reading a socket.
func (l *loop) run() {
	defer l.e.loopsWG.Done()
	defer l.closeFDs()
	defer func() {
		// Connections' own work recovers where it runs (handlers, tunnel
		// pumps); a panic of the loop itself ends this listener, as a
		// failed epoll_wait does, with its stack in the log.
		if v := recover(); v != nil {
			panics.Report("event loop", v)
			l.e.fail(fmt.Errorf("event loop panicked: %v", v))
		}
	}()
	f, err := l.pollable()
	if err != nil {
		l.e.fail(err)
		return
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		l.e.fail(fmt.Errorf("waiting for events: %w", err))
		return
	}
	ws := &waitState{events: make([]unix.EpollEvent, 128)}
	ws.fn = ws.try
	events := ws.events
	f.SetReadDeadline(time.Now().Add(sweepEvery(l.e.idleTimeout())))
	for {
		n, err := l.wait(rc, ws)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			idle := l.e.idleTimeout() // read each time: a reload may change it
			if idle > 0 {
				l.sweep(l.e.now() - idle)
			}
			l.sweepHeld(l.e.now())
			f.SetReadDeadline(time.Now().Add(sweepEvery(idle)))
		case err != nil:
			l.e.fail(fmt.Errorf("waiting for events: %w", err))
			return
		}
		for i := range n {
			if !l.fire(&events[i]) {
				return
			}
		}
	}
}

// pollable returns the epoll instance as a file that Go's poller watches.
func (l *loop) pollable() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(l.epfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicating the epoll fd: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("duplicating the epoll fd: %w", err)
	}
	return os.NewFile(uintptr(fd), "epoll"), nil
}

// waitState is the loop goroutine's epoll_wait, bound once (a closure
// made per wait would be an allocation per wake-up).
type waitState struct {
	events []unix.EpollEvent
	n      int
	err    error
	fn     func(fd uintptr) bool
}

func (ws *waitState) try(fd uintptr) bool {
	ws.n, ws.err = unix.EpollWait(int(fd), ws.events, 0)
	if errors.Is(ws.err, unix.EINTR) {
		ws.n, ws.err = 0, nil
	}
	return ws.n > 0 || ws.err != nil
}

// wait returns ready events, parking the goroutine in Go's poller until
// there are some.
func (l *loop) wait(rc syscall.RawConn, ws *waitState) (int, error) {
	err := rc.Read(ws.fn)
	if err == nil {
		err = ws.err
	}
	return ws.n, err
}

// fire dispatches one event; false when the loop must stop.
func (l *loop) fire(ev *unix.EpollEvent) bool {
	if ev.Fd == wakeSlot {
		var b [8]byte
		unix.Read(l.wakefd, b[:])
		l.mu.Lock()
		defer l.mu.Unlock()
		return !l.stopped
	}
	l.mu.Lock()
	w := l.lookup(uint32(ev.Fd), uint32(ev.Pad))
	if w == nil {
		l.mu.Unlock()
		return true // closed since the event was queued
	}
	var wake uint8
	var seen uint32
	if ev.Events&inReady != 0 {
		wake |= w.waits & waitIn
		seen |= evIn
	}
	if ev.Events&outReady != 0 {
		wake |= w.waits & waitOut
		seen |= evOut
	}
	if ev.Events&hupEvents != 0 {
		seen |= evHup
	}
	w.waits &^= wake
	dispatch := w.state == stArmed && ev.Events&inReady != 0
	if dispatch {
		w.state = stBusy
		if w.tun == nil {
			l.unlink(w.conn)
		}
	}
	if w.reg&regET != 0 {
		// evIn stays until the handler's next read begins: a handler
		// that parks without reading parks through the kernel (arm).
		w.ev.Or(seen)
	} else if w.events() != 0 {
		// What is still waited for: the one-shot event disarmed it all.
		// An error here shows again at the next call on the socket.
		w.raw.Control(func(fd uintptr) { l.ctl(w, int(fd)) })
	}
	l.mu.Unlock()
	if wake != 0 {
		s := w.sock()
		if wake&waitIn != 0 {
			s.wake(dirRead)
		}
		if wake&waitOut != 0 {
			s.wake(dirWrite)
		}
	}
	if dispatch {
		w.fire(l.buf[:])
	}
	return true
}

// sock is the engine's socket whose waiting calls w wakes: the client's,
// or a tunnel's upstream side once the engine owns it (tunnel.adopt).
// Only an engine socket's calls register waits (waitIn, waitOut).
func (w *watch) sock() *fdConn {
	if w.conn != nil {
		return &w.conn.fd
	}
	return &w.tun.upfd
}

// loop is the loop w is registered on: its connection's, or its tunnel's.
func (w *watch) loop() *loop {
	if w.conn != nil {
		return w.conn.l
	}
	return w.tun.c.l
}

// ctl arms w's registration for w.events(), under l.mu and with fd held.
func (l *loop) ctl(w *watch, fd int) error {
	op := unix.EPOLL_CTL_MOD
	if w.reg&regAdded == 0 {
		op = unix.EPOLL_CTL_ADD
	}
	ev := unix.EpollEvent{Events: w.events(), Fd: int32(w.idx), Pad: int32(w.gen)}
	if err := unix.EpollCtl(l.epfd, op, fd, &ev); err != nil {
		return fmt.Errorf("arming socket: %w", err)
	}
	w.reg |= regAdded
	return nil
}

// await registers a call on the engine's socket fd (held by the caller)
// as waiting for direction dir; the loop wakes it (fdConn.wake) when an
// event comes. ready reports instead that an edge came since the call's
// last try began (watch.ev): it must try again rather than wait.
func (l *loop) await(w *watch, dir int, fd int) (ready bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stopped:
		return false, errStopped
	case w.state == stClosed || w.idx == 0:
		return false, net.ErrClosed
	case w.reg&regET != 0 && w.ev.Load()&(1<<dir) != 0:
		return true, nil
	}
	w.waits |= 1 << dir
	if w.reg&regET != 0 {
		if w.reg&regAdded != 0 && (dir == dirRead || w.reg&regOut != 0) {
			return false, nil // the registration reports every edge
		}
		if dir == dirWrite {
			w.reg |= regOut
		}
	}
	if err := l.ctl(w, fd); err != nil {
		w.waits &^= 1 << dir
		return false, err
	}
	return false, nil
}

func (l *loop) lookup(idx, gen uint32) *watch {
	if idx == 0 || int(idx) > len(l.slots) {
		return nil
	}
	if w := l.slots[idx-1]; w != nil && w.gen == gen {
		return w
	}
	return nil
}

// add gives w a slot, so that an event can find it and a forced shutdown
// close it.
func (l *loop) add(w *watch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	w.gen = l.gen
	if n := len(l.free); n > 0 {
		w.idx = l.free[n-1] + 1
		l.free = l.free[:n-1]
	} else {
		l.slots = append(l.slots, nil)
		w.idx = uint32(len(l.slots))
	}
	l.slots[w.idx-1] = w
}

// arm waits for fd (w's socket, held by RawConn.Control so it cannot be
// closed and reused meanwhile) to become readable. A client connection
// that is not a tunnel goes on the idle list. During shutdown only
// tunnels are armed.
//
// An edge-triggered socket whose last read saw it drained, with no edge
// since and no end of stream, needs no system call: the next bytes bring
// an edge. Otherwise
// the registration is modified to itself, which reports the socket at
// once when it is readable now.
func (l *loop) arm(w *watch, fd int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stopped:
		return errStopped
	case w.state == stClosed || w.idx == 0:
		return errors.New("connection closed")
	case w.tun == nil && l.e.shutting.Load():
		return errors.New("shutting down")
	}
	prev := w.state
	w.state = stArmed
	if w.tun == nil && w.conn.fd.wt.Load() == nil {
		// Bits left by calls that timed out. A waiter still there means
		// a call may still wait (dropWaiter keeps it for one under way
		// on another goroutine): its bit stays.
		w.waits = 0
	}
	if w.reg&(regET|regAdded) != regET|regAdded || w.ev.Load()&(evIn|evDrained|evHup) != evDrained {
		if err := l.ctl(w, fd); err != nil {
			w.state = prev
			return err
		}
	}
	if w.tun == nil {
		l.link(w.conn)
	}
	return nil
}

// setTunnel makes the client side of t part of it.
func (l *loop) setTunnel(w *watch, t *tunnel) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w.tun, w.dir = t, dirUp
}

// detach marks a served connection as handed over; it keeps its slot for
// a forced shutdown. Its registration stays disarmed until it is closed.
func (l *loop) detach(w *watch) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.state == stBusy {
		w.state = stDetached
		l.e.detached.Add(1)
	}
}

// forget takes w off the loop for good and returns the state it was in.
// Closing the fd then removes it from the epoll set.
func (l *loop) forget(w *watch) uint8 {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := w.state
	if prev == stArmed && w.tun == nil {
		l.unlink(w.conn)
	}
	w.state = stClosed
	w.waits = 0
	if w.idx != 0 {
		l.slots[w.idx-1] = nil
		l.free = append(l.free, w.idx-1)
		w.idx = 0
	}
	return prev
}
