package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestLoadAgainstOrigin runs the load client against the origin on a
// loopback port: every call answered, none an error, the RESULT line
// carrying what the script reads.
func TestLoadAgainstOrigin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newOrigin()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() { srv.Stop(); <-done })

	r, err := load(options{addr: ln.Addr().String(), workers: 4, channels: 2, size: 64, duration: 200 * time.Millisecond, timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.calls == 0 || r.errors != 0 {
		t.Fatalf("calls %d, errors %d (first: %v)", r.calls, r.errors, r.firstErr)
	}
	line := r.String()
	for _, f := range []string{"RESULT calls=", " errors=0 ", " calls_per_sec=", " p50_ms=", " p99_ms="} {
		if !strings.Contains(line, f) {
			t.Errorf("%q lacks %q", line, f)
		}
	}
	if r.p50 <= 0 {
		t.Errorf("p50 %v, p99 %v", r.p50, r.p99)
	}
}

// TestLoadRefusesBadOptions: zero workers is an error, not a silent run.
func TestLoadRefusesBadOptions(t *testing.T) {
	if _, err := load(options{addr: "127.0.0.1:1", workers: 0, channels: 1}); err == nil {
		t.Fatal("no error for -workers 0")
	}
}
