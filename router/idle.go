package router

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Idle timeout while streaming (conf.Upstream.IdleTimeout).
//
// A watchdog per exchange is armed while a body is moving: the request body
// from the first byte until EOF (phaseUpload), the response body from its
// headers until EOF or close (phaseDownload). Every successful Read only
// stores a timestamp; the timer fires at most once per IdleTimeout, re-arms
// itself for the remaining time when there was progress, and otherwise
// cancels the upstream exchange with a cause. The upstream client then
// closes the upstream connection, which ends a stalled response body (the
// client connection is aborted) or the round trip (408 for a stalled
// request body, 504 otherwise). For a stalled request body it also sets the
// client connection's read deadline, because the goroutine sending the body is
// blocked reading it. When both bodies move at once, progress on either
// keeps the exchange alive. Upgraded (101) connections are not watched.

const (
	phaseUpload = 1 << iota
	phaseDownload
)

var epoch = time.Now()

func monotonic() int64 { return int64(time.Since(epoch)) }

type watchdog struct {
	last atomic.Int64 // monotonic ns of the last progress
	// reading counts reads of the client's request body in progress: when
	// the timer fires during an upload, a read in progress means the
	// client stalled; none means the upstream stopped taking the body.
	reading atomic.Int32

	mu     sync.Mutex
	timer  *time.Timer
	g      uint64 // generation: a body of an earlier request cannot arm or disarm
	idle   time.Duration
	phases int
	// running: the timer is set. It is left running when a request ends,
	// and stops at its next firing when no body is moving, so that back-
	// to-back requests on one pooled exchange reset no timer.
	running bool
	due     int64 // monotonic ns when the running timer fires
	cancel  func(cause error)
	w       httpmsg.ResponseWriter // client writer, for SetReadDeadline
}

func (d *watchdog) init() {
	d.timer = time.AfterFunc(time.Hour, d.fire)
	d.timer.Stop()
}

// start attaches the watchdog to a new outbound request.
func (d *watchdog) start(w httpmsg.ResponseWriter, cancel func(cause error), idle time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.g++
	d.w, d.cancel, d.idle, d.phases = w, cancel, idle, 0
}

func (d *watchdog) gen() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.g
}

// stop detaches the watchdog from its request.
func (d *watchdog) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.g++
	d.w, d.cancel, d.phases = nil, nil, 0
}

func (d *watchdog) touch() { d.last.Store(monotonic()) }

func (d *watchdog) arm(g uint64, phase int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if g != d.g || d.idle <= 0 || d.cancel == nil {
		return
	}
	d.touch()
	// A timer left running by an earlier request may be due later than
	// this request's idle timeout allows (another pool's); reset it then.
	if now := monotonic(); !d.running || d.due > now+int64(d.idle) {
		d.reset(now, d.idle)
	}
	d.phases |= phase
}

func (d *watchdog) disarm(g uint64, phase int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if g != d.g || d.phases&phase == 0 {
		return
	}
	d.phases &^= phase
}

func (d *watchdog) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.phases == 0 || d.cancel == nil {
		d.running = false
		return
	}
	now := monotonic()
	if quiet := time.Duration(now - d.last.Load()); quiet < d.idle {
		d.reset(now, d.idle-quiet)
		return
	}
	if d.phases&phaseUpload != 0 && d.reading.Load() > 0 {
		d.cancel(errClientIdle)
		_ = d.w.SetReadDeadline(time.Now())
	} else {
		d.cancel(errUpstreamIdle)
	}
	d.phases, d.running = 0, false
}

// reset sets the timer to fire after wait; d.mu is held.
func (d *watchdog) reset(now int64, wait time.Duration) {
	d.timer.Reset(wait)
	d.running, d.due = true, now+int64(wait)
}

// bodyTap wraps the client's request body: it counts bytes and feeds the
// watchdog. It is allocated per request, with the gate of the request's
// first try (bodygate.go), through which the upstream client reads it;
// the exchange ends only once that gate is closed, so no read of the tap
// (of the front end's body, of the pooled watchdog) outlives the request.
//
// It also enforces the listener's body limit: once the count passes limit
// (when limit > 0), reads fail with errBodyTooLarge (see bodylimit.go).
type bodyTap struct {
	r     io.Reader
	n     atomic.Int64
	wd    *watchdog
	gen   uint64
	limit int64
	gate  bodyGate // the first try's gate
}

var errBodyTooLarge = errors.New("request body larger than max_body_bytes")

func (t *bodyTap) Read(p []byte) (int, error) {
	if t.exceeded() {
		return 0, errBodyTooLarge
	}
	t.wd.reading.Add(1)
	n, err := t.r.Read(p)
	t.wd.reading.Add(-1)
	if n > 0 {
		var lerr error
		n, lerr = limitRead(n, t.n.Add(int64(n)), t.limit)
		if lerr != nil {
			err = lerr
		}
		t.wd.touch()
	}
	if err != nil {
		t.wd.disarm(t.gen, phaseUpload)
	}
	return n, err
}

// exceeded reports whether the body went past the limit.
func (t *bodyTap) exceeded() bool { return t.limit > 0 && t.n.Load() > t.limit }
