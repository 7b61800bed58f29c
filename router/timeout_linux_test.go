package router

import (
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	a := testutil.FullBacklog(t)
	start := time.Now()
	status, body, _ := errorThrough(t, a, func(u *conf.Upstream) { u.ConnectTimeout = 150 * time.Millisecond })
	if status != 504 || body != "Gateway Timeout\n" {
		t.Errorf("got %d %q, want 504", status, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
