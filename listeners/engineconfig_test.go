package listeners

import (
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/listeners/engine"
)

func TestEngineConfig(t *testing.T) {
	t.Parallel()
	l := conf.DefaultListener("web", ":80")
	l.MaxConns, l.Backlog, l.RecvBuffer = 10, 128, 4096
	got := engineConfig(l)
	want := engine.Config{Addr: ":80", Backlog: 128, NoDelay: true, MaxConns: 10, IdleTimeout: 60 * time.Second,
		DeferAccept: time.Second, KeepAlive: true, KeepAliveIdle: 60 * time.Second,
		KeepAliveInterval: 15 * time.Second, KeepAliveCount: 4, RecvBuffer: 4096}
	if got != want {
		t.Errorf("engineConfig = %+v\nwant           %+v", got, want)
	}
}
