package main

import (
	"os"
	"runtime"
	"runtime/debug"

	"github.com/edgeway/edgeway/conf"
)

// applyRuntime applies the main file's runtime settings to the process.
// A zero field leaves its setting as the environment (GOMAXPROCS,
// GOMEMLIMIT, GOGC) or the runtime's default made it. GOMAXPROCS 0 (auto)
// goes back to the runtime's default (from the CPU count and the cgroup
// CPU quota, kept up to date by Go 1.25+) unless the GOMAXPROCS variable
// is set.
func applyRuntime(r conf.Runtime) {
	switch {
	case r.GOMAXPROCS > 0:
		runtime.GOMAXPROCS(r.GOMAXPROCS)
	case os.Getenv("GOMAXPROCS") == "":
		runtime.SetDefaultGOMAXPROCS()
	}
	if r.MemoryLimit > 0 {
		debug.SetMemoryLimit(r.MemoryLimit)
	}
	if r.GCPercent != 0 {
		debug.SetGCPercent(r.GCPercent)
	}
}
