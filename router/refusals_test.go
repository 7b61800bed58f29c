package router

import (
	"testing"
	"time"
)

// TestRefusalLogBudget: a second's refusal lines stop at the budget; the
// first line of the next second says how many were left out.
func TestRefusalLogBudget(t *testing.T) {
	t.Parallel()
	var l refusalLog
	now := time.Unix(1000, 0)
	written := 0
	for range maxRefusalLines + 5 {
		if ok, _ := l.take(now); ok {
			written++
		}
	}
	if written != maxRefusalLines {
		t.Fatalf("%d lines in one second, want %d", written, maxRefusalLines)
	}
	ok, suppressed := l.take(now.Add(time.Second))
	if !ok || suppressed != 5 {
		t.Fatalf("next second: ok %v, suppressed %d, want true, 5", ok, suppressed)
	}
}
