package engine

import (
	"runtime"
	"time"
)

// Config is the engine's part of a listener's configuration. The zero
// value listens with the system's defaults for every socket option,
// Nagle's algorithm on, no keepalive, no connection limit and no idle
// timeout; ConfigFrom fills it from a listen block with edgeway's defaults.
type Config struct {
	// Addr is host:port to listen on; port 0 picks a free port.
	Addr string
	// Backlog is the listen(2) backlog (capped by net.core.somaxconn).
	// 0 uses net.core.somaxconn.
	Backlog int
	// ReusePort sets SO_REUSEPORT and opens AcceptLoops listening sockets
	// on Addr, one accept goroutine each; the kernel spreads new
	// connections over them.
	ReusePort bool
	// AcceptLoops is the number of listening sockets when ReusePort is on.
	// 0 means one per GOMAXPROCS. Ignored (one socket) when ReusePort is
	// off.
	AcceptLoops int
	// Loops is the number of epoll loops parked connections are spread
	// over. 0 means GOMAXPROCS, at most 4.
	Loops int
	// NoDelay sets TCP_NODELAY on accepted connections; false leaves
	// Nagle's algorithm on.
	NoDelay bool
	// MaxConns caps open client connections (parked, served, detached or
	// tunnelled); further clients wait in the kernel backlog. 0: no limit.
	MaxConns int
	// IdleTimeout closes a parked connection (one waiting for its next
	// request) after this long without bytes. 0: never. Tunnels and
	// detached connections have no idle timeout here.
	IdleTimeout time.Duration
	// DeferAccept sets TCP_DEFER_ACCEPT, rounded up to whole seconds: a
	// connection is handed over only when its first bytes arrive (or after
	// about this long). 0 turns it off.
	DeferAccept time.Duration
	// FastOpen is the TCP_FASTOPEN queue length of the listening socket
	// (the kernel must allow it: net.ipv4.tcp_fastopen bit 2). 0: off.
	FastOpen int
	// KeepAlive turns TCP keepalive on for accepted connections, with the
	// three settings below; false turns it off.
	KeepAlive bool
	// KeepAliveIdle, KeepAliveInterval and KeepAliveCount set TCP_KEEPIDLE,
	// TCP_KEEPINTVL (whole seconds) and TCP_KEEPCNT. 0 leaves each at the
	// system default (net.ipv4.tcp_keepalive_*).
	KeepAliveIdle     time.Duration
	KeepAliveInterval time.Duration
	KeepAliveCount    int
	// RecvBuffer and SendBuffer set SO_RCVBUF and SO_SNDBUF on the
	// listening socket, which accepted connections inherit (so the window
	// scale is chosen from them). 0 keeps the kernel's autotuning.
	RecvBuffer int
	SendBuffer int
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
// closed at most that late.
func (c *Config) sweepEvery() time.Duration {
	return min(max(c.IdleTimeout/8, 10*time.Millisecond), time.Second)
}
