//go:build linux

package engine

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// getsockopt reads integer options of a socket.
func getsockopt(t *testing.T, sc syscall.Conn, opts map[string][2]int) map[string]int {
	t.Helper()
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	rc.Control(func(fd uintptr) {
		for name, o := range opts {
			v, err := unix.GetsockoptInt(int(fd), o[0], o[1])
			if err != nil {
				t.Errorf("getsockopt %s: %v", name, err)
			}
			got[name] = v
		}
	})
	return got
}

// acceptedConn returns the server side of a new connection.
func acceptedConn(t *testing.T, cfg Config) (*Engine, Socket) {
	t.Helper()
	conns := make(chan Socket, 1)
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		conns <- c.Socket()
		return Park, true
	}}
	e := start(t, cfg, h)
	dial(t, e).Write([]byte("x\n"))
	select {
	case c := <-conns:
		return e, c
	case <-time.After(5 * time.Second):
		t.Fatal("not served")
		return nil, nil
	}
}

func TestSocketOptionsDefaults(t *testing.T) {
	t.Parallel()
	// A listen block's defaults (conf.DefaultListener).
	cfg := Config{Addr: "127.0.0.1:0", NoDelay: true, IdleTimeout: time.Minute, DeferAccept: time.Second,
		KeepAlive: true, KeepAliveIdle: time.Minute, KeepAliveInterval: 15 * time.Second, KeepAliveCount: 4}
	cfg.RecvBuffer, cfg.SendBuffer = 64<<10, 128<<10
	e, c := acceptedConn(t, cfg)
	got := getsockopt(t, c, map[string][2]int{
		"TCP_NODELAY":   {unix.IPPROTO_TCP, unix.TCP_NODELAY},
		"SO_KEEPALIVE":  {unix.SOL_SOCKET, unix.SO_KEEPALIVE},
		"TCP_KEEPIDLE":  {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
		"TCP_KEEPINTVL": {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL},
		"TCP_KEEPCNT":   {unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
		"SO_RCVBUF":     {unix.SOL_SOCKET, unix.SO_RCVBUF},
		"SO_SNDBUF":     {unix.SOL_SOCKET, unix.SO_SNDBUF},
	})
	want := map[string]int{"TCP_NODELAY": 1, "SO_KEEPALIVE": 1, "TCP_KEEPIDLE": 60, "TCP_KEEPINTVL": 15, "TCP_KEEPCNT": 4}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %d, want %d", name, got[name], v)
		}
	}
	// The kernel doubles the buffer sizes (capped by rmem_max/wmem_max).
	if got["SO_RCVBUF"] < 64<<10 || got["SO_SNDBUF"] < 128<<10 {
		t.Errorf("SO_RCVBUF %d, SO_SNDBUF %d: not inherited from the listener", got["SO_RCVBUF"], got["SO_SNDBUF"])
	}
	ln := getsockopt(t, e.lns[0], map[string][2]int{
		"TCP_DEFER_ACCEPT": {unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT},
		"SO_REUSEPORT":     {unix.SOL_SOCKET, unix.SO_REUSEPORT},
	})
	if ln["TCP_DEFER_ACCEPT"] < 1 || ln["SO_REUSEPORT"] != 0 {
		t.Errorf("listener: %v, want deferred accept and no SO_REUSEPORT", ln)
	}
}

func TestSocketOptionsOff(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.NoDelay, cfg.KeepAlive, cfg.ReusePort, cfg.FastOpen = false, false, true, 16
	e, c := acceptedConn(t, cfg)
	got := getsockopt(t, c, map[string][2]int{
		"TCP_NODELAY":  {unix.IPPROTO_TCP, unix.TCP_NODELAY},
		"SO_KEEPALIVE": {unix.SOL_SOCKET, unix.SO_KEEPALIVE},
	})
	if got["TCP_NODELAY"] != 0 || got["SO_KEEPALIVE"] != 0 {
		t.Errorf("accepted: %v, want both off", got)
	}
	ln := getsockopt(t, e.lns[0], map[string][2]int{
		"TCP_DEFER_ACCEPT": {unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT},
		"SO_REUSEPORT":     {unix.SOL_SOCKET, unix.SO_REUSEPORT},
		"TCP_FASTOPEN":     {unix.IPPROTO_TCP, unix.TCP_FASTOPEN},
	})
	if want := map[string]int{"TCP_DEFER_ACCEPT": 0, "SO_REUSEPORT": 1, "TCP_FASTOPEN": 16}; !equalMaps(ln, want) {
		t.Errorf("listener: %v, want %v", ln, want)
	}
}

func TestBacklog(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Backlog = 1
	cfg.MaxConns = 1
	e := start(t, cfg, &lineHandler{})
	roundTrip(t, dial(t, e), "x")
	// With one slot taken and a backlog of 1, the kernel queues at most a
	// couple more handshakes; later SYNs are dropped (the dial times out).
	var refused bool
	for range 8 {
		c, err := net.DialTimeout("tcp", e.Addr().String(), 200*time.Millisecond)
		if err != nil {
			refused = true
			break
		}
		defer c.Close()
	}
	if !refused {
		t.Error("a backlog of 1 queued 8 connections")
	}
}

func equalMaps(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAcceptorClosedIsErrClosed: an accept waiting when its acceptor is
// closed returns an error that is net.ErrClosed, as a closed
// net.Listener's Accept does, so that whoever closed it sees a shutdown
// and not an accept failure to retry.
func TestAcceptorClosedIsErrClosed(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := newAcceptor(nil, ln)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- a.accept(ln) }()
	a.close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("accept after close: %v; want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("accept still waiting 10s after its acceptor was closed")
	}
}
