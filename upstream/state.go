package upstream

import (
	"sync"
	"sync/atomic"
	"time"
)

// State is what a server is, as one word for the admin API and logs.
// When several conditions hold, the first in this order is shown:
// disabled, draining, ejected, unhealthy, open, half-open, healthy.
type State uint8

// The states of a server.
const (
	Healthy   State = iota // takes traffic
	Unhealthy              // failed its active health checks (or not checked yet)
	Ejected                // ejected by outlier detection until its time ends
	Open                   // its error-rate breaker is open
	HalfOpen               // its breaker lets a few trial requests through
	Draining               // drained by an admin: no new requests
	Disabled               // disabled by an admin: no requests, even in panic mode
)

var stateNames = [...]string{"healthy", "unhealthy", "ejected", "open", "half-open", "draining", "disabled"}

// numStates is the number of states.
const numStates = len(stateNames)

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// MarshalText writes the state's name (for JSON).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// serving reports whether a server in state s takes traffic outside
// panic mode.
func (s State) serving() bool { return s == Healthy || s == HalfOpen }

// Transition is one change of a server's state.
type Transition struct {
	At     time.Time `json:"at"`
	From   State     `json:"from"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
}

// historyLen is how many transitions a server keeps.
const historyLen = 16

// ServerState is the per-server state that outlives a reload: a Set hands
// the same *ServerState to every Pool generation that lists the server, keyed
// by pool name and address. Health, ejections, the breaker and admin
// overrides all live here, so a reload that keeps the server keeps them.
//
// The exported counters and the unexported view fields are atomics
// because every pick and every Done reads or writes them without a lock;
// the state machine behind them (machine) changes rarely, under mu, and
// publishes its result to the view.
type ServerState struct {
	InFlight    atomic.Int64  // requests picked and not yet Done
	Requests    atomic.Uint64 // requests completed (any outcome)
	Failures    atomic.Uint64 // requests that failed or got a 5xx
	LastFailure atomic.Int64  // unix nanoseconds of the last failure; 0 if none

	state     atomic.Uint32            // State: the view Pick reads
	override  atomic.Int32             // runtime weight; -1 when none
	rampStart atomic.Int64             // unix ns slow start began; 0 when not ramping
	until     atomic.Int64             // unix ns the ejection or open breaker ends; 0 if neither
	trials    atomic.Int32             // half-open trial requests admitted
	seq5xx    atomic.Int32             // consecutive 5xx or failed responses
	seqConn   atomic.Int32             // consecutive connect failures
	entered   [numStates]atomic.Uint64 // transitions into each state

	group *group
	// mu guards m. Lock order in package upstream, outermost first:
	// Set.mu, then group.ejectMu (outlier.go), then Pool.mu (pick.go,
	// status.go), then ServerState.mu; a ServerState's atomics are read
	// without a lock (Pick). Nothing takes Pool.mu or ejectMu while it
	// holds a ServerState's mu (SetOverride lets go of it first).
	mu sync.Mutex
	m  machine
}

// tri is an override switch: unset, on or off.
type tri uint8

const (
	unset tri = iota
	on
	off
)

// machine is the state machine of one server; each input (a check, an
// ejection, a breaker trip, an admin override) changes its conditions and
// derive turns them into one State.
type machine struct {
	initialized bool // set up by the first pool that listed it
	healthy     bool // passing active checks (always true without them)
	checked     bool // at least one check ran
	fresh       bool // created with its pool: no slow start on the first success
	passes      int  // consecutive passing checks
	fails       int  // consecutive failing checks
	lastCheck   string

	ejected      bool
	ejectUntil   time.Time
	ejections    int
	lastEjectEnd time.Time

	brk       breakerPhase
	openUntil time.Time
	trialOK   int
	win       window

	weight          int // override; -1 when none
	drain, disabled tri

	state   State
	since   time.Time
	reason  string
	history [historyLen]Transition
	nhist   int
}

func newServerState(g *group, now time.Time, fresh bool) *ServerState {
	st := &ServerState{group: g}
	st.override.Store(-1)
	st.m = machine{healthy: true, fresh: fresh, weight: -1, since: now, reason: "added"}
	return st
}

func (m *machine) derive() State {
	switch {
	case m.disabled == on:
		return Disabled
	case m.drain == on:
		return Draining
	case m.ejected:
		return Ejected
	case !m.healthy:
		return Unhealthy
	case m.brk == brkOpen:
		return Open
	case m.brk == brkHalfOpen:
		return HalfOpen
	}
	return Healthy
}

// settle derives the state after a change of conditions and publishes it;
// it returns the transition, or ok=false when the state did not change.
// Called with mu held. slow is the pool's slow start (0: none).
func (st *ServerState) settle(now time.Time, reason string, slow time.Duration) (Transition, bool) {
	m := &st.m
	next := m.derive()
	st.publishUntil()
	if next == m.state {
		if !next.serving() && reason != "" {
			m.reason = reason // the latest cause of the same state
		}
		return Transition{}, false
	}
	tr := Transition{At: now, From: m.state, To: next, Reason: reason}
	if next == Healthy && !m.state.serving() && slow > 0 && !m.fresh {
		st.rampStart.Store(now.UnixNano())
	}
	m.fresh = false
	m.state, m.since, m.reason = next, now, reason
	m.history[m.nhist%historyLen] = tr
	m.nhist++
	st.state.Store(uint32(next))
	if int(next) < numStates {
		st.entered[next].Add(1)
	}
	st.group.epoch.Add(1)
	return tr, true
}

// publishUntil stores the earliest end of a timed condition for Pick's
// lazy expiry.
func (st *ServerState) publishUntil() {
	m := &st.m
	var until time.Time
	if m.ejected {
		until = m.ejectUntil
	}
	if m.brk == brkOpen && (until.IsZero() || m.openUntil.Before(until)) {
		until = m.openUntil
	}
	if until.IsZero() {
		st.until.Store(0)
		return
	}
	st.until.Store(until.UnixNano())
	st.group.noteExpiry(until.UnixNano())
}

// transitions returns the kept transitions, oldest first.
func (m *machine) transitions() []Transition {
	n := min(m.nhist, historyLen)
	out := make([]Transition, 0, n)
	for i := m.nhist - n; i < m.nhist; i++ {
		out = append(out, m.history[i%historyLen])
	}
	return out
}

// group is the shared part of one pool name's servers: every state change
// bumps epoch, so pools recount healthy servers only after one; expiry is
// the earliest time an ejection or open breaker ends (0: none).
type group struct {
	epoch   atomic.Uint64
	expiry  atomic.Int64
	ejectMu sync.Mutex // serialises ejections for max_ejection_percent
}

// noteExpiry lowers expiry to t.
func (g *group) noteExpiry(t int64) {
	for {
		cur := g.expiry.Load()
		if cur != 0 && cur <= t {
			return
		}
		if g.expiry.CompareAndSwap(cur, t) {
			return
		}
	}
}
