package listeners

import (
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/listeners/engine"
)

// engineConfig maps a listen block to the connection engine's settings:
// the engine knows sockets, not edgeway's configuration.
func engineConfig(l conf.Listener) engine.Config {
	return engine.Config{
		Addr:              l.Addr,
		Backlog:           l.Backlog,
		ReusePort:         l.ReusePort,
		AcceptLoops:       l.AcceptLoops,
		NoDelay:           l.NoDelay,
		MaxConns:          l.MaxConns,
		IdleTimeout:       l.IdleTimeout,
		DeferAccept:       l.DeferAccept,
		FastOpen:          l.FastOpen,
		KeepAlive:         l.KeepAlive,
		KeepAliveIdle:     l.KeepAliveIdle,
		KeepAliveInterval: l.KeepAliveInterval,
		KeepAliveCount:    l.KeepAliveCount,
		RecvBuffer:        l.RecvBuffer,
		SendBuffer:        l.SendBuffer,
	}
}
