package http1

import (
	"crypto/x509"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/listeners/engine"
)

// exchange is the state of one Serve call: the connection's buffers and
// the request being served. Pooled by the Server; nothing of it stays with
// a parked connection.
type exchange struct {
	s      *Server
	c      *engine.Conn
	small  []byte      // this exchange's smallBuf read buffer
	buf    []byte      // the read buffer in use: small, big or grown
	r, w   int         // unread bytes: buf[r:w]
	headBy time.Time   // the head being read must end by then (read_header_timeout)
	dl     atomic.Bool // a read deadline may be set on c
	tls    bool        // c's bytes pass through TLS: no raw socket reads or writes
	tlsV   uint16      // the TLS version and SNI name when tls, for the request
	sni    string
	cert   *x509.Certificate // the client's verified certificate, if any

	remote, local netip.AddrPort
	req           httpmsg.Request
	f             http1.Framing
	upgrade       bool // Upgrade or CONNECT request: no keep-alive after it
	body          body
	rw            writer
	trailerFn     func() httpmsg.Header // body.trailers, bound once
}

func newExchange(s *Server) *exchange {
	x := &exchange{s: s, small: make([]byte, smallBuf)}
	x.buf = x.small
	x.body.x = x
	x.rw.x = x
	x.rw.tryFn = x.rw.tryWrite
	x.trailerFn = x.body.trailers
	return x
}

// release drops what belongs to the connection and gives buffers back.
func (x *exchange) release() {
	if len(x.buf) == x.s.bigSize && &x.buf[0] != &x.small[0] {
		x.s.putBig(x.buf)
	}
	x.buf, x.r, x.w = x.small, 0, 0
	x.c = nil
	x.dl.Store(false)
	hdr := x.req.Header[:0]
	clear(x.req.Header)
	x.req = httpmsg.Request{Header: hdr}
	x.body.reset(bodyNone, 0)
	x.rw.release()
}

// serveConn serves what c has sent; see Server.Serve.
func (x *exchange) serveConn(c *engine.Conn) engine.Action {
	x.c = c
	x.tls, x.tlsV, x.sni, x.cert = false, 0, "", nil
	if tc := c.TLS(); tc != nil {
		cs := tc.ConnectionState()
		x.tls, x.tlsV, x.sni = true, cs.Version, cs.ServerName
		if len(cs.VerifiedChains) > 0 {
			x.cert = cs.VerifiedChains[0][0]
		}
	}
	x.remote = c.RemoteAddrPort()
	x.local = c.LocalAddrPort()
	held := x.restoreHead()
	if act, ok := x.firstRead(); !ok {
		if held && act == engine.Park {
			return x.holdHead() // woken with nothing new
		}
		return act
	}
	for first := true; ; first = false {
		if act, ok := x.readHead(first); !ok {
			return act
		}
		if act, ok := x.serveOne(); !ok {
			return act
		}
		if !x.skipEmptyLines() {
			x.clearDeadline()
			if !x.tls {
				return engine.Park
			}
			// TLS may hold decrypted or read-ahead bytes the socket no
			// longer shows: look there before parking.
			if act, ok := x.firstRead(); !ok {
				return act
			}
		}
	}
}

// firstRead reads what woke the connection with one non-blocking read: a
// wake-up with nothing to read parks it again instead of holding a
// goroutine in a blocking read.
func (x *exchange) firstRead() (engine.Action, bool) {
	if x.tls {
		return x.firstTLSRead()
	}
	n, err := x.c.TryRead(x.buf[x.w:])
	switch {
	case n > 0:
		x.w += n
		return 0, true
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
		return engine.Park, false
	default: // end of stream or a broken connection
		return engine.Close, false
	}
}

// firstTLSRead is firstRead over TLS, where a read(2) on the socket
// would bypass the TLS layer. Bytes TLS already holds (a record read
// ahead with the handshake or an earlier request) are taken with a read
// that may not wait; then, when the socket has bytes or an end of stream
// waiting, a read that may wait up to the read-header timeout (a record
// can arrive in parts); else the connection is parked (a client that
// connected ahead of its first request, or a wake-up with nothing to
// read).
func (x *exchange) firstTLSRead() (engine.Action, bool) {
	x.c.SetReadDeadline(longAgo)
	n, err := x.c.Read(x.buf[x.w:])
	var dl time.Time // none, or a held head's (restoreHead)
	if x.dl.Load() {
		dl = x.headBy
	}
	x.c.SetReadDeadline(dl)
	if n > 0 {
		x.w += n
		return 0, true
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return engine.Close, false
	}
	if !x.socketReadable() {
		return engine.Park, false
	}
	if !x.dl.Load() {
		x.headBy = time.Now().Add(x.s.readHeaderTimeout())
	}
	x.setDeadline(x.headBy)
	if err := x.fill(); err != nil {
		return engine.Close, false
	}
	return 0, true
}

// longAgo is a deadline in the past: a read under it takes only what is
// buffered.
var longAgo = time.Unix(1, 0)

// socketReadable reports whether the socket has bytes or an end of stream
// to read, without taking any (MSG_PEEK, non-blocking).
func (x *exchange) socketReadable() bool {
	ready := false
	x.c.Raw().Read(func(fd uintptr) bool {
		var one [1]byte
		n, _, err := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ready = n > 0 || (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
		return true
	})
	return ready
}

// skipEmptyLines drops CRLFs a client sent after a request (RFC 9112 §2.2)
// and reports whether bytes of a next request are buffered.
func (x *exchange) skipEmptyLines() bool {
	for x.r < x.w && (x.buf[x.r] == '\r' || x.buf[x.r] == '\n') {
		x.r++
	}
	if x.r == x.w {
		x.r, x.w = 0, 0
		return false
	}
	return true
}

// serveOne runs the handler on the parsed request and ends the exchange.
// ok is false when the connection leaves this Serve call with act.
func (x *exchange) serveOne() (act engine.Action, ok bool) {
	x.prepare()
	if !x.callHandler() {
		if x.rw.status != 0 {
			x.c.Abort() // a started response must not look complete
		}
		return engine.Close, false
	}
	return x.finish()
}

// prepare completes the request ParseRequest filled.
func (x *exchange) prepare() {
	req, f := &x.req, &x.f
	req.RemoteAddr, req.LocalAddr = x.remote, x.local
	req.TLS, req.TLSVersion, req.ServerName, req.ClientCert = x.tls, x.tlsV, x.sni, x.cert
	req.Close = !f.KeepAlive
	x.upgrade = f.Upgrade || req.Method == "CONNECT"
	if f.H2CUpgrade {
		req.Header = httpsyntax.StripH2C(req.Header, true)
	}
	switch {
	case f.Chunked:
		x.body.reset(bodyChunked, -1)
		x.body.startChunked()
		req.ContentLength, req.Body, req.Trailer = -1, &x.body, x.trailerFn
	case f.ContentLength > 0:
		x.body.reset(bodyLength, f.ContentLength)
		req.ContentLength, req.Body, req.Trailer = f.ContentLength, &x.body, nil
	default:
		x.body.reset(bodyNone, 0)
		req.ContentLength, req.Body, req.Trailer = 0, nil, nil
	}
	x.body.expect = f.Expect100 && req.Body != nil && req.ProtoMinor > 0
	x.rw.reset()
	if req.Body != nil {
		x.clearDeadline() // the head's timeout does not bound the body
	}
}

// callHandler runs the handler and reports whether it returned normally.
// A panic is logged (except http.ErrAbortHandler's kind, an intended abort)
// and closes the connection.
func (x *exchange) callHandler() (ok bool) {
	defer func() {
		if ok {
			return
		}
		if v := recover(); v != nil && !panics.IsAbort(v) {
			panics.Report("http1 handler", v, slog.String("remote", x.remote.String()), slog.String("method", x.req.Method))
		}
	}()
	x.s.cfg.Handler.ServeProxy(&x.rw, &x.req)
	return true
}

// finish completes the response after the handler returned, drains the
// unread body and decides whether the connection goes on.
func (x *exchange) finish() (engine.Action, bool) {
	w := &x.rw
	if w.tunneled {
		x.clearDeadline()
		return engine.Park, false // the engine starts the tunnel
	}
	if err := w.end(); w.aborted {
		x.c.Abort()
		return engine.Close, false
	} else if err != nil || w.close {
		return x.closeAfter(), false
	}
	if !x.body.drain() {
		return x.closeAfter(), false
	}
	return 0, true
}

// closeAfter ends a connection after a response: with a lingering close
// when the client may still be sending (RFC 9112 §9.6).
func (x *exchange) closeAfter() engine.Action {
	if x.rw.err == nil && (x.r < x.w || !x.body.done()) {
		x.linger()
	}
	return engine.Close
}

// linger half-closes the connection, then reads and drops what the client
// still sends, for a short while.
func (x *exchange) linger() {
	hc, ok := x.c.Conn.(interface{ CloseWrite() error })
	if !ok || hc.CloseWrite() != nil {
		return
	}
	x.setDeadline(time.Now().Add(lingerTimeout))
	buf := x.buf
	for n := 0; n < lingerBytes; {
		m, err := x.c.Read(buf)
		n += m
		if err != nil {
			return
		}
	}
}

func (x *exchange) setDeadline(t time.Time) {
	x.c.SetReadDeadline(t)
	x.dl.Store(true)
}

func (x *exchange) clearDeadline() {
	if x.dl.Swap(false) {
		x.c.SetReadDeadline(time.Time{})
	}
}
