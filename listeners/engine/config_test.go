package engine

import (
	"runtime"
	"testing"
	"time"
)

func TestConfigDerived(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc        string
		cfg         Config
		accepts     int
		sweep       time.Duration
		tunnelWrite time.Duration
	}{
		{desc: "zero", accepts: 1, sweep: time.Second, tunnelWrite: time.Minute},
		{desc: "reuseport default", cfg: Config{ReusePort: true}, accepts: runtime.GOMAXPROCS(0), sweep: time.Second, tunnelWrite: time.Minute},
		{desc: "loops without reuseport", cfg: Config{AcceptLoops: 4}, accepts: 1, sweep: time.Second, tunnelWrite: time.Minute},
		{desc: "idle", cfg: Config{ReusePort: true, AcceptLoops: 3, IdleTimeout: 4 * time.Second, TunnelWriteTimeout: -1}, accepts: 3, sweep: 500 * time.Millisecond, tunnelWrite: -1},
		{desc: "short idle", cfg: Config{IdleTimeout: 40 * time.Millisecond}, accepts: 1, sweep: 10 * time.Millisecond, tunnelWrite: time.Minute},
		{desc: "long idle", cfg: Config{IdleTimeout: time.Hour}, accepts: 1, sweep: time.Second, tunnelWrite: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := tt.cfg.acceptLoops(); got != tt.accepts {
				t.Errorf("acceptLoops = %d, want %d", got, tt.accepts)
			}
			if got := sweepEvery(tt.cfg.IdleTimeout); got != tt.sweep {
				t.Errorf("sweepEvery = %v, want %v", got, tt.sweep)
			}
			if got := tt.cfg.tunnelWriteTimeout(); got != tt.tunnelWrite {
				t.Errorf("tunnelWriteTimeout = %v, want %v", got, tt.tunnelWrite)
			}
		})
	}
}
