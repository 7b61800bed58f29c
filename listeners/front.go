package listeners

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/alpn"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/listeners/engine"
	"github.com/edgeway/edgeway/listeners/h2conn"
	"github.com/edgeway/edgeway/listeners/http1"
	"github.com/edgeway/edgeway/listeners/proxyproto"
	"github.com/edgeway/edgeway/listeners/sniff"
)

// front is the engine handler of a listener that has a stage before
// HTTP: the PROXY protocol header, and on a TLS listener the ClientHello
// peek, passthrough or handshake, and the choice of HTTP/1 or HTTP/2 by
// ALPN. It runs on a connection's first dispatch only; later dispatches
// of a terminated connection go straight to the HTTP/2 server when it
// parked the connection (h2conn.Resume), else to the HTTP/1 server (the
// connection's stream is then the TLS layer, engine.Conn.TLS).
//
// Nothing of the client's stream is consumed before it is needed: the
// PROXY header is peeked (MSG_PEEK) and then exactly its bytes are read,
// and the ClientHello is only peeked, so a passed-through connection's
// upstream reads the client's bytes from the first, and crypto/tls reads
// the hello from the socket itself.
type front struct {
	name     string
	p        protocolSet
	h1       *http1.Server
	h2       *h2Fronts
	tls      *tls.Config
	pass     func(ctx context.Context, h *sniff.Hello, client, local netip.AddrPort) (net.Conn, error)
	trusted  []netip.Prefix // PROXY protocol peers; nil: no PROXY stage
	headerTO atomic.Int64   // PROXY header and plain-text time limit (a time.Duration; Server.Update sets it)
	hsTO     time.Duration  // ClientHello and handshake
	log      *slog.Logger
	stats    frontStats
	refused  func(httpmsg.Refusal) // Options.Refused; nil: not reported
}

// frontStats counts what the stages before HTTP decided.
type frontStats struct {
	handshakes, handshakeFailures, passedThrough, passthroughFailures, proxyRefused, notTLS atomic.Int64
}

// FrontStats counts the connections a listener's TLS and PROXY protocol
// stages handled since it started.
type FrontStats struct {
	Handshakes          int64 // completed TLS handshakes
	HandshakeFailures   int64 // ClientHellos or handshakes that failed or timed out
	PassedThrough       int64 // connections sent on to a tcp route's server
	PassthroughFailures int64 // a tcp route matched but no server could be reached
	ProxyRefused        int64 // untrusted peers and bad PROXY headers
	NotTLS              int64 // plain HTTP sent to the TLS port
}

// Limits of the stages before HTTP.
const (
	maxProxyHeader = 4 << 10
	maxHello       = sniff.MaxHelloBytes
)

// helloBufs are ClientHello peek buffers.
var helloBufs = sync.Pool{New: func() any { b := make([]byte, maxHello); return &b }}

func newFront(cfg conf.Listener, p protocolSet, s *Server, o Options, log *slog.Logger) *front {
	f := &front{name: cfg.Name, p: p, h1: s.h1, h2: s.h2, pass: o.Passthrough,
		hsTO: 10 * time.Second, log: log, refused: o.Refused}
	f.headerTO.Store(int64(cfg.ReadHeaderTimeout))
	if cfg.ProxyProtocol != nil {
		f.trusted = cfg.ProxyProtocol.Trusted
	}
	if cfg.TLS != nil && cfg.TLS.HandshakeTimeout > 0 {
		f.hsTO = cfg.TLS.HandshakeTimeout
	}
	if p.tls {
		tc := o.TLS.Clone()
		tc.NextProtos = append(p.alpn(), alpn.ACME)
		f.tls = tc
	}
	return f
}

// Serve runs the stages on a connection's first dispatch, then HTTP.
func (f *front) Serve(c *engine.Conn) engine.Action {
	if !c.Fresh() {
		if a, ok := h2conn.Resume(c); ok {
			return a // a parked HTTP/2 connection
		}
		return f.h1.Serve(c)
	}
	nc := net.Conn(c.Socket())
	if f.trusted != nil {
		pc, ok := f.readProxy(c)
		if !ok {
			return engine.Close
		}
		nc = pc
		c.Conn = pc
	}
	if f.tls == nil {
		return f.h1.Serve(c)
	}
	return f.serveTLS(c, nc)
}

// readProxy reads the PROXY protocol header of a connection from a
// trusted peer and returns the connection as the header presents it. A
// peer that is not trusted, or a missing or broken header, closes the
// connection (reported; a peer that closes before sending a byte, as a
// TCP health check does, is not a refusal).
func (f *front) readProxy(c *engine.Conn) (net.Conn, bool) {
	peer := addrPort(c.RemoteAddr())
	if !trusts(f.trusted, peer.Addr()) {
		f.stats.proxyRefused.Add(1)
		f.refuse(httpmsg.ProtoProxy, 0, httpmsg.ReasonProxyUntrustedPeer, peer, nil)
		c.Abort()
		return nil, false
	}
	c.SetReadDeadline(time.Now().Add(time.Duration(f.headerTO.Load())))
	h, err := proxyproto.Read(c.Raw(), maxProxyHeader)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		f.stats.proxyRefused.Add(1)
		if !errors.Is(err, io.EOF) {
			f.refuse(httpmsg.ProtoProxy, 0, httpmsg.ReasonProxyHeaderInvalid, peer, err)
		}
		c.Abort()
		return nil, false
	}
	pc := &proxiedConn{Socket: c.Socket(), remote: c.RemoteAddr(), local: c.LocalAddr()}
	if !h.Local && h.Source.IsValid() {
		pc.remote = net.TCPAddrFromAddrPort(h.Source)
		if h.Dest.IsValid() {
			pc.local = net.TCPAddrFromAddrPort(h.Dest)
		}
	}
	return pc, true
}

// serveTLS peeks the ClientHello, passes the connection through when a
// tcp route claims it, else completes the handshake and serves HTTP/1 or
// HTTP/2 by ALPN.
func (f *front) serveTLS(c *engine.Conn, nc net.Conn) engine.Action {
	c.SetDeadline(time.Now().Add(f.hsTO))
	bp := helloBufs.Get().(*[]byte)
	hello, _, err := sniff.Peek(c.Raw(), *bp)
	// Lifetime: the parsed hello's strings (SNI, ALPN) are copies, so the
	// buffer goes back at once.
	helloBufs.Put(bp)
	remote := addrPort(nc.RemoteAddr())
	if err != nil {
		if errors.Is(err, sniff.ErrNotTLS) {
			f.stats.notTLS.Add(1)
			f.refuse(httpmsg.ProtoTLS, http.StatusBadRequest, httpmsg.ReasonNotTLS, remote, nil)
			f.plainOnTLS(c)
			return engine.Close
		}
		f.stats.handshakeFailures.Add(1)
		if !errors.Is(err, io.EOF) {
			f.refuse(httpmsg.ProtoTLS, 0, httpmsg.ReasonTLSHandshakeFailed, remote, err)
		}
		return engine.Close
	}
	if f.pass != nil && !isACMEHello(hello.ALPN) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(f.hsTO))
		up, err := f.pass(ctx, &hello, remote, addrPort(nc.LocalAddr()))
		cancel()
		switch {
		case err == nil:
			f.stats.passedThrough.Add(1)
			c.SetDeadline(time.Time{})
			c.Tunnel(up, nil, nil)
			return engine.Close // the tunnel owns both sides now
		case !errors.Is(err, ErrNoRoute):
			f.stats.passthroughFailures.Add(1)
			f.log.Warn("passthrough failed", "remote", remote.String(), "sni", hello.SNI, "error", err.Error())
			return engine.Close
		}
	}
	tc := tls.Server(nc, f.tls)
	if err := tc.Handshake(); err != nil {
		f.stats.handshakeFailures.Add(1)
		f.refuse(httpmsg.ProtoTLS, 0, httpmsg.ReasonTLSHandshakeFailed, remote, err)
		return engine.Close
	}
	f.stats.handshakes.Add(1)
	c.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	switch {
	case st.NegotiatedProtocol == alpn.ACME:
		// A TLS-ALPN-01 validation: the handshake (with the challenge
		// certificate the store gave for it) was the answer.
		tc.Close()
		return engine.Close
	case st.NegotiatedProtocol == "h2" && f.h2 != nil:
		return f.h2.serveEngine(c, tc, f.serveH2)
	case !f.p.http1:
		f.refuse(httpmsg.ProtoTLS, 0, httpmsg.ReasonNoCommonProtocol, remote, nil)
		tc.Close()
		return engine.Close
	}
	c.Conn = tc
	return f.h1.Serve(c)
}

// serveH2 serves an HTTP/2 connection over TLS until it ends, on a
// goroutine of its own (h2_server xnet).
func (f *front) serveH2(c *engine.Conn, tc *tls.Conn) {
	defer func() {
		if v := recover(); v != nil && !panics.IsAbort(v) {
			panics.Report("h2 connection", v)
		}
		tc.Close()
		c.Close()
	}()
	f.h2.serve(tc)
}

// refuse reports a connection refused before HTTP: to Options.Refused
// (counted, and logged within the access log's budget) and, at debug
// level only, with err. A flood of them costs no log line past the
// budget, and no allocation here while debug is off.
func (f *front) refuse(proto string, status int, reason string, remote netip.AddrPort, err error) {
	if f.refused != nil {
		f.refused(httpmsg.Refusal{Listener: f.name, Protocol: proto, Status: status, Reason: reason, Remote: remote})
	}
	if f.log.Enabled(context.Background(), slog.LevelDebug) {
		args := []any{"remote", remote.String(), "reason", reason}
		if err != nil {
			args = append(args, "error", err.Error())
		}
		f.log.Debug("refused connection", args...)
	}
}

// plainOnTLS answers a plain-text request sent to a TLS port, as Go's
// server does, so that a mistaken `http://` shows the user why.
func (f *front) plainOnTLS(c *engine.Conn) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write([]byte("HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"))
}

// isACMEHello reports a hello that offers only the TLS-ALPN-01 protocol.
func isACMEHello(protos []string) bool { return len(protos) == 1 && protos[0] == alpn.ACME }

// proxiedConn is a client connection whose addresses come from its PROXY
// protocol header.
type proxiedConn struct {
	engine.Socket
	remote, local net.Addr
}

// RemoteAddr returns the client's address as the PROXY header gave it.
func (c *proxiedConn) RemoteAddr() net.Addr { return c.remote }

// LocalAddr returns the address the client connected to, as the PROXY
// header gave it.
func (c *proxiedConn) LocalAddr() net.Addr { return c.local }

func trusts(nets []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range nets {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	return netip.AddrPort{}
}
