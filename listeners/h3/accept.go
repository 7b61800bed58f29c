package h3

import (
	"context"
	"net"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/panics"
)

// listener is the http3.QUICListener the http3.Server serves: the QUIC
// listener with the server's connection counts on Accept.
type listener struct{ s *Server }

var _ http3.QUICListener = listener{}

func (l listener) Accept(ctx context.Context) (*quic.Conn, error) {
	c, err := l.s.ln.Accept(ctx)
	if err != nil {
		return nil, err
	}
	l.s.track(c)
	return c, nil
}

func (l listener) Addr() net.Addr { return l.s.ln.Addr() }

// Close is a no-op: Shutdown and Close close the QUIC listener
// themselves, and http3.Server never closes a listener it was handed.
func (l listener) Close() error { return nil }

// track counts an accepted connection until it closes, and its handshake
// as done once it completes. Accept returns a connection before its
// handshake completes (the early listener, for 0-RTT), so a goroutine
// waits for it.
func (s *Server) track(c *quic.Conn) {
	s.stats.accepted.Add(1)
	s.stats.active.Add(1)
	context.AfterFunc(c.Context(), func() { s.stats.active.Add(-1) })
	sl, _ := c.Context().Value(slotKey{}).(*slot)
	if sl == nil {
		return
	}
	sl.conn.Store(c)
	panics.Go("quic handshake watch", func() {
		select {
		case <-c.HandshakeComplete():
			sl.handshakeDone(true)
		case <-c.Context().Done():
		}
	})
}

// connKey is the context key of a request's *quic.Conn.
type connKey struct{}

// connValues is the http3.Server's ConnContext: it puts the connection in
// its requests' context, for the 0-RTT check.
func connValues(ctx context.Context, c *quic.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}
