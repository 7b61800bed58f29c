package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

// TestApplyRuntime changes process-wide settings: not parallel, restored.
func TestApplyRuntime(t *testing.T) {
	procs, limit, gc := runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	defer func() {
		runtime.GOMAXPROCS(procs)
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gc)
	}()
	applyRuntime(conf.Runtime{GOMAXPROCS: 3, MemoryLimit: 1 << 30, GCPercent: 250})
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("GOMAXPROCS = %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("memory limit = %d", got)
	}
	if got := debug.SetGCPercent(gc); got != 250 {
		t.Errorf("GC percent = %d", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	applyRuntime(conf.Runtime{}) // leaves the limit and GOGC alone
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit after a zero Runtime = %d", got)
	}
}
