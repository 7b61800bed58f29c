//go:build linux

package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

// blockingHandler holds the line "block" until release is closed, then
// answers it.
func blockingHandler(entered chan<- struct{}, release <-chan struct{}) *lineHandler {
	return &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		if line != "block" {
			return 0, false
		}
		entered <- struct{}{}
		<-release
		c.Write([]byte("echo block\n"))
		return Park, true
	}}
}

func shutdownAsync(e *Engine, ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.Shutdown(ctx) }()
	return done
}

func TestShutdownClosesIdleAndWaitsForActive(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	e := start(t, testConfig(), blockingHandler(entered, release))
	idle, busy := dial(t, e), dial(t, e)
	roundTrip(t, idle, "x")
	busy.Write([]byte("block\n"))
	<-entered
	waitStats(t, e, "one parked, one active", func(s Stats) bool { return s.Parked == 1 && s.Active == 1 })

	done := shutdownAsync(e, context.Background())
	waitEOF(t, idle) // closed at once
	if !e.Shutting() {
		t.Error("Shutting() = false during Shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a connection in service", err)
	default:
	}
	close(release)
	if got := readN(t, busy, len("echo block\n")); got != "echo block\n" {
		t.Errorf("in-service answer = %q", got)
	}
	waitEOF(t, busy) // closed, not parked again
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

func TestShutdownForced(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	e := start(t, testConfig(), blockingHandler(entered, release))
	busy := dial(t, e)
	busy.Write([]byte("block\n"))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := e.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want a deadline error", err)
	}
	waitEOF(t, busy)
}

func TestShutdownWaitsForDetached(t *testing.T) {
	t.Parallel()
	detached := make(chan *Conn, 1)
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		if line != "detach" {
			return 0, false
		}
		detached <- c
		return Detach, true
	}}
	e := start(t, testConfig(), h)
	c := dial(t, e)
	c.Write([]byte("detach\n"))
	dc := <-detached
	waitStats(t, e, "the connection to be detached", func(s Stats) bool { return s.Detached == 1 && s.Active == 0 })
	done := shutdownAsync(e, context.Background())
	dc.Write([]byte("still mine\n"))
	if got := readN(t, c, len("still mine\n")); got != "still mine\n" {
		t.Errorf("detached connection wrote %q", got)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v before the detached connection closed", err)
	default:
	}
	dc.Close()
	dc.Close() // idempotent
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if s := e.Stats(); s != (Stats{}) {
		t.Errorf("stats after shutdown = %+v", s)
	}
}
