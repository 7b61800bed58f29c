package h3

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/quic-go/quic-go"
)

// sourceTable counts the connections of each client address, for
// Options.MaxConnsPerSource. The address is not yet validated when the
// count is taken (a spoofer can use up a victim's share), which is why
// the limit is per address and Retry is asked for under load.
type sourceTable struct {
	max int
	mu  sync.Mutex
	n   map[netip.Addr]int
}

func (t *sourceTable) init(max int) {
	t.max = max
	t.n = map[netip.Addr]int{}
}

// take counts a connection from a; false when a is at its limit.
func (t *sourceTable) take(a netip.Addr) bool {
	if t.max <= 0 {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n[a] >= t.max {
		return false
	}
	t.n[a]++
	return true
}

func (t *sourceTable) release(a netip.Addr) {
	if t.max <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n[a] <= 1 {
		delete(t.n, a)
		return
	}
	t.n[a]--
}

var errTooManyFromSource = errors.New("h3: too many connections from this address")

// slot is a connection's place in the counts, from its first Initial
// until it is gone.
type slot struct {
	s       *Server
	src     netip.Addr
	conn    atomic.Pointer[quic.Conn] // set once accepted (track)
	hsOnce  sync.Once
	endOnce sync.Once
}

type slotKey struct{}

// completed reports whether the connection's handshake completed.
func (sl *slot) completed() bool {
	c := sl.conn.Load()
	if c == nil {
		return false
	}
	select {
	case <-c.HandshakeComplete():
		return true
	default:
		return false
	}
}

// handshakeDone ends the handshake's count, once.
func (sl *slot) handshakeDone(ok bool) {
	sl.hsOnce.Do(func() {
		sl.s.handshaking.Add(-1)
		if ok {
			sl.s.stats.hsOK.Add(1)
		} else {
			sl.s.stats.hsFailed.Add(1)
		}
	})
}

func (sl *slot) end() {
	sl.endOnce.Do(func() {
		// A connection that completed its handshake and closed before
		// track's watcher ran (a busy machine) counts as completed.
		sl.handshakeDone(sl.completed())
		sl.s.sources.release(sl.src)
	})
}

// connContext runs for every new connection attempt, before the
// handshake: it applies the per-source limit and starts the counts that
// end with the connection (quic-go cancels ctx when the connection
// closes or its handshake fails).
func (s *Server) connContext(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	src := addrOf(ci.RemoteAddr)
	if !s.sources.take(src) {
		s.stats.refused.Add(1)
		return nil, errTooManyFromSource
	}
	sl := &slot{s: s, src: src}
	s.handshaking.Add(1)
	context.AfterFunc(ctx, sl.end)
	return context.WithValue(ctx, slotKey{}, sl), nil
}

func addrOf(a net.Addr) netip.Addr {
	if u, ok := a.(*net.UDPAddr); ok {
		ap := u.AddrPort()
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}
