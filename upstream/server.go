package upstream

import "time"

// Outcome is what a proxied request says about the server that served it.
type Outcome uint8

// The outcomes a caller reports through Server.Done.
const (
	// Success: the server answered with a response (any status).
	Success Outcome = iota
	// Failure: the server could not be reached or gave no valid response
	// (refused, reset, timeout, malformed response).
	Failure
	// Abandoned: the exchange ended for a reason that says nothing about
	// the server (the client went away, stalled or sent a bad body). It
	// never counts against the server.
	Abandoned
)

// Result is how a request started by Pick went, reported through Done.
type Result struct {
	Outcome Outcome
	// Status is the upstream's response status; 0 when none arrived.
	Status int
	// ConnectFailed is set when no connection to the server could be
	// opened (see httpclient.IsConnectError).
	ConnectFailed bool
	// Latency is the time from Pick to the response head (or failure).
	Latency time.Duration
}

// failed reports whether r counts against the server: no valid response,
// or a 5xx.
func (r Result) failed() bool { return r.Outcome == Failure || r.Outcome == Success && r.Status >= 500 }

// Server is one backend of a Pool. Addr and Weight are as configured.
type Server struct {
	Addr   string
	Weight int
	// ID is the server's opaque, stable name in sticky cookies: derived
	// from the pool name and the address, not revealing either.
	ID    string
	State *ServerState
	pool  *Pool
	// setCookie is the Set-Cookie value that pins a client to the server
	// in a sticky pool, built with the pool.
	setCookie string
}

// Done ends a request started by Pick and records how it went. Every
// successful Pick must be followed by exactly one Done, after the response
// body was copied (or the exchange failed), so that a draining pool knows
// when its connections are idle. A Failure or a 5xx feeds outlier
// ejection and the breaker; an Abandoned request feeds nothing.
func (s *Server) Done(r Result) {
	st := s.State
	st.InFlight.Add(-1)
	st.Requests.Add(1)
	if r.Outcome == Abandoned {
		if State(st.state.Load()) == HalfOpen && st.trials.Add(-1) < 0 {
			st.trials.Store(0) // a trial slot back
		}
	} else {
		s.pool.observe(s, r)
	}
	s.pool.release()
}

// observe feeds a finished request to the server's state machine.
func (p *Pool) observe(s *Server, r Result) {
	st := s.State
	failed := r.failed()
	if failed {
		st.Failures.Add(1)
		st.LastFailure.Store(p.now().UnixNano())
	}
	if p.cfg.Outlier != nil {
		p.outlier(s, r, failed)
	}
	if p.cfg.Breaker != nil {
		p.breaker(s, failed)
	}
}
