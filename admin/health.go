package admin

import (
	"io"
	"net/http"
)

// Readiness: a load balancer should send traffic only while ready.
const (
	starting int32 = iota // the first table is not live or listeners not bound yet
	ready                 // serving
	draining              // SIGTERM received: still serving, but leave
)

var readinessText = map[int32]string{starting: "starting\n", ready: "ready\n", draining: "shutting down\n"}

// SetReady makes /readyz answer 200: call it once the first routing table
// is live and every listener is bound.
func (s *Server) SetReady() { s.state.CompareAndSwap(starting, ready) }

// SetDraining makes /readyz answer 503 for good: call it as soon as
// edgeway is told to stop, while it still serves, so that the load
// balancer stops sending first.
func (s *Server) SetDraining() { s.state.Store(draining) }

// Ready reports whether /readyz answers 200.
func (s *Server) Ready() bool { return s.state.Load() == ready }

// healthz is liveness: the process answers.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readyz is readiness: 200 "ready", or 503 "starting" / "shutting down".
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	st := s.state.Load()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if st != ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	io.WriteString(w, readinessText[st])
}
