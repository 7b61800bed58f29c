package httpclient

import (
	"errors"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	addr := testutil.FullBacklog(t)
	tr := newTestTransport(t, func(u *conf.Upstream) { u.ConnectTimeout = 150 * time.Millisecond })
	start := time.Now()
	_, _, err := get(t, tr, "GET", addr)
	var ue *Error
	if !errors.As(err, &ue) || ue.Kind != KindConnect || !ue.Timeout() {
		t.Fatalf("error = %v, want a connect *Error with Timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
