package router

import (
	"syscall"
	"time"
)

// compressThreadCPU is the CPU time the calling OS thread has used (user
// and system), so that a benchmark on a busy machine can report the CPU
// an operation costs rather than the wall time it waited for a core.
func compressThreadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
