package engine

import (
	"runtime"
	"time"
)

// Config is the engine's part of a listener's configuration. What each
// socket setting does, its default in a listen block and its bounds are
// documented once, on conf.Listener's field of the same name (listeners
// maps one to the other); here only the zero values differ: the zero
// Config listens with the system's defaults for every socket option,
// Nagle's algorithm on, no keepalive, no connection limit and no idle
// timeout.
type Config struct {
	// Addr is host:port to listen on; port 0 picks a free port.
	Addr string
	// Backlog: 0 uses net.core.somaxconn.
	Backlog int
	// ReusePort opens AcceptLoops listening sockets, one accept
	// goroutine each.
	ReusePort bool
	// AcceptLoops: 0 means one per GOMAXPROCS; ignored without ReusePort.
	AcceptLoops int
	// Loops is the number of epoll loops parked connections are spread
	// over (not a listen setting). 0 means GOMAXPROCS, at most 4.
	Loops int
	// NoDelay: false leaves Nagle's algorithm on. Engine.SetNoDelay
	// changes it for the connections accepted after it.
	NoDelay bool
	// MaxConns counts parked, served, detached and tunnelled connections.
	// 0: no limit.
	MaxConns int
	// IdleTimeout applies to parked connections only. 0: never.
	// Engine.SetIdleTimeout changes it while serving.
	IdleTimeout time.Duration
	// DeferAccept is rounded up to whole seconds. 0: off.
	DeferAccept time.Duration
	// FastOpen: 0 is off.
	FastOpen int
	// KeepAlive with the three settings below; false: off.
	KeepAlive bool
	// KeepAliveIdle, KeepAliveInterval (whole seconds) and KeepAliveCount:
	// 0 leaves each at the system default.
	KeepAliveIdle     time.Duration
	KeepAliveInterval time.Duration
	KeepAliveCount    int
	// RecvBuffer and SendBuffer are set on the listening socket, which
	// accepted connections inherit. 0 keeps the kernel's autotuning.
	RecvBuffer int
	SendBuffer int
	// GoPoller makes each client socket a *net.TCPConn in Go's poller,
	// as before issue 25 (about 1 KiB more per connection: the runtime's
	// poll descriptor and net's structures). false, the default: the
	// engine accepts with accept4(2) and reads, writes and waits on the
	// descriptor itself (see doc.go).
	GoPoller bool
	// TunnelWriteTimeout bounds one write to either side of a tunnel; a
	// peer that reads nothing for this long ends the tunnel. 0 means
	// DefaultTunnelWriteTimeout; negative means no limit.
	TunnelWriteTimeout time.Duration
}

// DefaultTunnelWriteTimeout is Config.TunnelWriteTimeout's zero value.
const DefaultTunnelWriteTimeout = time.Minute

// maxLoops caps the default number of epoll loops: one loop goroutine
// easily keeps up with a few hundred thousand wake-ups a second.
const maxLoops = 4

// acceptLoops is the number of listening sockets to open.
func (c *Config) acceptLoops() int {
	switch {
	case !c.ReusePort:
		return 1
	case c.AcceptLoops > 0:
		return c.AcceptLoops
	}
	return runtime.GOMAXPROCS(0)
}

func (c *Config) loops() int {
	if c.Loops > 0 {
		return c.Loops
	}
	return min(runtime.GOMAXPROCS(0), maxLoops)
}

func (c *Config) tunnelWriteTimeout() time.Duration {
	if c.TunnelWriteTimeout == 0 {
		return DefaultTunnelWriteTimeout
	}
	return c.TunnelWriteTimeout
}

// sweepEvery is how often a loop looks for parked connections past the
// idle timeout: an eighth of it, between 10ms and 1s, so a connection is
// closed at most that late. With no idle timeout there is nothing to
// sweep, and a loop looks once a second for one that SetIdleTimeout set.
func sweepEvery(idle time.Duration) time.Duration {
	if idle <= 0 {
		return time.Second
	}
	return min(max(idle/8, 10*time.Millisecond), time.Second)
}
