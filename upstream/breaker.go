package upstream

import (
	"fmt"
	"time"
)

// The per-server error-rate breaker: closed, it counts requests and
// failures over a sliding window; past the error rate it opens for the
// cool-down; then half-open, it lets a few trial requests through and
// closes when they all succeed.

type breakerPhase uint8

const (
	brkClosed breakerPhase = iota
	brkOpen
	brkHalfOpen
)

// windowBuckets is the resolution of the sliding window.
const windowBuckets = 10

// window counts requests and failures in buckets of Window/10; a bucket
// older than the window is ignored and reused.
type window struct {
	epoch        [windowBuckets]int64 // bucket number (time / width) of each slot
	total, fails [windowBuckets]int
}

func (w *window) add(now time.Time, span time.Duration, failed bool) {
	width := max(int64(span)/windowBuckets, 1)
	e := now.UnixNano() / width
	i := e % windowBuckets
	if w.epoch[i] != e {
		w.epoch[i], w.total[i], w.fails[i] = e, 0, 0
	}
	w.total[i]++
	if failed {
		w.fails[i]++
	}
}

func (w *window) sum(now time.Time, span time.Duration) (total, fails int) {
	width := max(int64(span)/windowBuckets, 1)
	e := now.UnixNano() / width
	for i := range w.epoch {
		if e-w.epoch[i] < windowBuckets {
			total += w.total[i]
			fails += w.fails[i]
		}
	}
	return total, fails
}

// breaker feeds one request's result to s's breaker.
func (p *Pool) breaker(s *Server, failed bool) {
	b, st, now := p.cfg.Breaker, s.State, p.now()
	st.mu.Lock()
	m, reason := &st.m, ""
	switch m.brk {
	case brkClosed:
		m.win.add(now, b.Window, failed)
		total, fails := m.win.sum(now, b.Window)
		if total >= b.MinRequests && fails*100 >= b.ErrorRate*total {
			m.brk, m.openUntil = brkOpen, now.Add(b.CoolDown)
			reason = fmt.Sprintf("error rate %d%%: %d of %d requests failed in %v; open for %v",
				fails*100/total, fails, total, b.Window, b.CoolDown)
		}
	case brkHalfOpen:
		if failed {
			m.brk, m.openUntil = brkOpen, now.Add(b.CoolDown)
			reason = fmt.Sprintf("a trial request failed; open for %v", b.CoolDown)
		} else if m.trialOK++; m.trialOK >= b.Trials {
			m.brk, m.win = brkClosed, window{}
			reason = fmt.Sprintf("%d trial requests succeeded", m.trialOK)
		}
	}
	tr, ok := st.settle(now, reason, p.cfg.SlowStart)
	st.mu.Unlock()
	if ok {
		p.logTransition(s, tr)
	}
}
