package engine

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

func TestConfigFrom(t *testing.T) {
	t.Parallel()
	l := conf.DefaultListener("web", ":80")
	l.MaxConns, l.Backlog, l.RecvBuffer = 10, 128, 4096
	got := ConfigFrom(l)
	want := Config{Addr: ":80", Backlog: 128, NoDelay: true, MaxConns: 10, IdleTimeout: 60 * time.Second,
		DeferAccept: time.Second, KeepAlive: true, KeepAliveIdle: 60 * time.Second,
		KeepAliveInterval: 15 * time.Second, KeepAliveCount: 4, RecvBuffer: 4096}
	if got != want {
		t.Errorf("ConfigFrom = %+v\nwant         %+v", got, want)
	}
}

func TestConfigDerived(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc        string
		cfg         Config
		accepts     int
		sweep       time.Duration
		tunnelWrite time.Duration
	}{
		{desc: "zero", accepts: 1, sweep: 10 * time.Millisecond, tunnelWrite: time.Minute},
		{desc: "reuseport default", cfg: Config{ReusePort: true}, accepts: runtime.GOMAXPROCS(0), sweep: 10 * time.Millisecond, tunnelWrite: time.Minute},
		{desc: "loops without reuseport", cfg: Config{AcceptLoops: 4}, accepts: 1, sweep: 10 * time.Millisecond, tunnelWrite: time.Minute},
		{desc: "idle", cfg: Config{ReusePort: true, AcceptLoops: 3, IdleTimeout: 4 * time.Second, TunnelWriteTimeout: -1}, accepts: 3, sweep: 500 * time.Millisecond, tunnelWrite: -1},
		{desc: "long idle", cfg: Config{IdleTimeout: time.Hour}, accepts: 1, sweep: time.Second, tunnelWrite: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := tt.cfg.acceptLoops(); got != tt.accepts {
				t.Errorf("acceptLoops = %d, want %d", got, tt.accepts)
			}
			if got := tt.cfg.sweepEvery(); got != tt.sweep {
				t.Errorf("sweepEvery = %v, want %v", got, tt.sweep)
			}
			if got := tt.cfg.tunnelWriteTimeout(); got != tt.tunnelWrite {
				t.Errorf("tunnelWriteTimeout = %v, want %v", got, tt.tunnelWrite)
			}
		})
	}
}

// TestApplyRuntime changes process-wide settings: not parallel, restored.
func TestApplyRuntime(t *testing.T) {
	procs, limit, gc := runtime.GOMAXPROCS(0), debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	defer func() {
		runtime.GOMAXPROCS(procs)
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(gc)
	}()
	ApplyRuntime(conf.Runtime{GOMAXPROCS: 3, MemoryLimit: 1 << 30, GCPercent: 250})
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
	ApplyRuntime(conf.Runtime{}) // leaves the limit and GOGC alone
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit after a zero Runtime = %d", got)
	}
}
