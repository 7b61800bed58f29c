package h3

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"
)

// serverConn is one QUIC connection's HTTP/3 side: its control stream,
// the peer's unidirectional streams and a goroutine per request.
type serverConn struct {
	s       *Server
	conn    *quic.Conn
	remote  string       // conn.RemoteAddr().String(), for http.Request.RemoteAddr
	local   *net.TCPAddr // the UDP address in the form stdhttp reads
	tlsOnce sync.Once
	tls     *tls.ConnectionState

	mu        sync.Mutex
	control   *quic.SendStream
	inFlight  int
	lastID    quic.StreamID // highest request stream accepted; -1: none
	goingAway bool
}

func newServerConn(s *Server, c *quic.Conn) *serverConn {
	sc := &serverConn{s: s, conn: c, remote: c.RemoteAddr().String(), lastID: -1}
	if u, ok := c.LocalAddr().(*net.UDPAddr); ok {
		// stdhttp takes the local address from http.LocalAddrContextKey
		// as a *net.TCPAddr; the IP and port are what it needs.
		sc.local = &net.TCPAddr{IP: u.IP, Port: u.Port, Zone: u.Zone}
	}
	return sc
}

func (c *serverConn) serve() {
	s := c.s
	s.stats.accepted.Add(1)
	s.stats.active.Add(1)
	defer func() {
		s.stats.active.Add(-1)
		s.forget(c)
	}()
	if sl, ok := c.conn.Context().Value(slotKey{}).(*slot); ok {
		go func() {
			select {
			case <-c.conn.HandshakeComplete():
				sl.handshakeDone(true)
			case <-c.conn.Context().Done():
			}
		}()
	}
	ctl, err := openControl(c.conn, s.o.MaxHeaderBytes)
	if err != nil {
		c.conn.CloseWithError(quic.ApplicationErrorCode(ErrInternal), "")
		return
	}
	c.mu.Lock()
	c.control = ctl
	away := c.goingAway
	c.mu.Unlock()
	if away {
		c.sendGoAway()
	}
	go readPeerStreams(c.conn, nil)
	for {
		st, err := c.conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		if !c.admit(st.StreamID()) {
			st.CancelRead(quic.StreamErrorCode(ErrRequestRejected))
			st.CancelWrite(quic.StreamErrorCode(ErrRequestRejected))
			continue
		}
		go c.serveStream(st)
	}
}

// admit counts a request stream in, unless GOAWAY has been sent for it.
func (c *serverConn) admit(id quic.StreamID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.goingAway && id > c.lastID {
		return false
	}
	c.lastID = max(c.lastID, id)
	c.inFlight++
	return true
}

// done counts a request stream out; the last one after GOAWAY closes the
// connection.
func (c *serverConn) done() {
	c.mu.Lock()
	c.inFlight--
	closeNow := c.goingAway && c.inFlight == 0
	c.mu.Unlock()
	if closeNow {
		c.closeSoon()
	}
}

// closeSoon closes a connection whose requests are done after GOAWAY.
// The last response may still be in flight, unacknowledged, and closing
// at once would drop it: the connection lingers for a few round trips
// (the client may close it first), then closes with H3_NO_ERROR.
func (c *serverConn) closeSoon() {
	linger := min(max(4*c.conn.ConnectionStats().SmoothedRTT, 50*time.Millisecond), time.Second)
	t := time.AfterFunc(linger, func() {
		c.conn.CloseWithError(quic.ApplicationErrorCode(ErrNoError), "")
	})
	context.AfterFunc(c.conn.Context(), func() { t.Stop() })
}

// goAway starts the connection's graceful close (RFC 9114 §5.2): GOAWAY
// names the first stream that will not be served; the connection closes
// when the requests before it are done.
func (c *serverConn) goAway() {
	c.mu.Lock()
	if c.goingAway {
		c.mu.Unlock()
		return
	}
	c.goingAway = true
	idle := c.inFlight == 0
	ready := c.control != nil
	c.mu.Unlock()
	if ready {
		c.sendGoAway()
	}
	if idle {
		c.closeSoon()
	}
}

func (c *serverConn) sendGoAway() {
	c.mu.Lock()
	next := c.lastID + 4
	if c.lastID < 0 {
		next = 0
	}
	ctl := c.control
	c.mu.Unlock()
	p := quicvarint.Append(nil, uint64(next))
	b := appendFrameHeader(nil, frameGoAway, uint64(len(p)))
	ctl.Write(append(b, p...))
}

// tlsState is the connection's TLS state once its handshake is done;
// nil before (a request in 0-RTT data), an empty state standing in then.
func (c *serverConn) tlsState() *tls.ConnectionState {
	select {
	case <-c.conn.HandshakeComplete():
	default:
		return &tls.ConnectionState{}
	}
	c.tlsOnce.Do(func() {
		cs := c.conn.ConnectionState().TLS
		c.tls = &cs
	})
	return c.tls
}

func (c *serverConn) handshakeComplete() bool {
	select {
	case <-c.conn.HandshakeComplete():
		return true
	default:
		return false
	}
}
