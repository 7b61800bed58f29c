package h2conn

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// WebSocket over HTTP/2 (RFC 8441). The server advertises
// SETTINGS_ENABLE_CONNECT_PROTOCOL; a client then opens a WebSocket as a
// CONNECT with :protocol websocket, :scheme, :path and :authority. The
// handler sees it as the HTTP/1.1 request it stands for (RFC 8441 §5):
// GET :path with Connection: Upgrade, Upgrade: websocket and a
// Sec-WebSocket-Key made here, so that routing, the upstream handshake
// and the tunnel registry are the HTTP/1 path's. The upstream's 101
// (its Sec-WebSocket-Accept checked against the key) becomes :status
// 200 without Sec-WebSocket-Accept; any other answer goes to the client
// as it is. Then the stream's DATA carries the client's bytes and its
// responses the upstream's: two goroutines copy, each bounded by the
// flow-control windows (the stream's 256 KiB of receive window, and the
// client's send window plus maxOut). The client's END_STREAM half-closes
// the upstream connection; the upstream's end is END_STREAM, then
// RST_STREAM NO_ERROR if the client still sends; RST_STREAM and a close
// stand for each other (RFC 9113 §8.5). A quiet tunnel holds its two
// goroutines, a 1 KiB read buffer and its stream; not yet parked on the
// engine's loop as an HTTP/1 tunnel is.

// settingEnableConnectProtocol is SETTINGS_ENABLE_CONNECT_PROTOCOL
// (RFC 8441 §3).
const settingEnableConnectProtocol = 0x8

// codeConnect is CONNECT_ERROR: the tunnel's upstream connection failed
// (RFC 9113 §8.5).
const codeConnect = 0xa

// wsChunk is the buffer the upstream's bytes are read into, and the
// receive buffer a tunnel keeps once emptied.
const wsChunk = 16 << 10

// wsSmall is the buffer a quiet tunnel's upstream read waits on.
const wsSmall = 1 << 10

// wsBufs lends wsChunk buffers to tunnels moving bytes.
var wsBufs = sync.Pool{New: func() any { return new([wsChunk]byte) }}

var (
	errBadSwitch = errors.New("h2conn: the upstream's 101 does not answer the WebSocket handshake sent")
	errTunnelEnd = errors.New("h2conn: tunnel ended")
)

// wsState is a stream's extended CONNECT.
type wsState struct {
	on       bool   // the request is an extended CONNECT for websocket
	key      string // the Sec-WebSocket-Key sent upstream
	switched bool   // WriteHead took the upstream's 101
	tunneled bool   // Tunnel started the copiers
	up       net.Conn
	upDone   bool // c.mu: the upstream-to-client copier ended
}

// extendedConnect checks an extended CONNECT (RFC 8441 §4) and turns a
// WebSocket one into the GET it stands for. It returns the status of a
// request answered here (501: another protocol than websocket) and the
// refusal reason of a malformed one.
func (c *conn) extendedConnect() (status int, malformed string) {
	hb := &c.hb
	st := hb.st
	switch {
	case st.req.Method != http.MethodConnect:
		return 0, httpmsg.ReasonMalformedRequest // :protocol only on CONNECT
	case !hb.scheme || !hb.path || !hb.authority:
		return 0, httpmsg.ReasonMalformedRequest
	case hb.protocol != "websocket":
		return http.StatusNotImplemented, ""
	}
	key := httpmsg.NewWebSocketKey()
	st.fields = st.fields.Del("sec-websocket-key")
	st.fields = append(st.fields, httpmsg.Field{Name: "connection", Value: "Upgrade"},
		httpmsg.Field{Name: "upgrade", Value: "websocket"}, httpmsg.Field{Name: "sec-websocket-key", Value: key})
	st.req.Method = http.MethodGet
	st.ws.on, st.ws.key = true, key
	return 0, ""
}

// answerPlainLocked answers st with status and its text, not counted as
// a refusal (the client made no mistake); c.mu is held.
func (c *conn) answerPlainLocked(st *stream, status int) {
	text := http.StatusText(status) + "\n"
	blk := appendStatus(nil, status)
	blk = appendField(blk, "content-type", "text/plain; charset=utf-8")
	blk = appendContentLength(blk, int64(len(text)))
	c.queueHeadersLocked(st.id, blk, false)
	c.queueDataLocked(len(text), flagEndStream, st.id)
	c.out = append(c.out, text...)
	c.endLocalLocked(st)
}

// switchWebSocket is WriteHead(101) on a stream: for an extended
// CONNECT whose upstream accepted the key, the head becomes :status 200
// without Sec-WebSocket-Accept (RFC 8441 §5), sent by Tunnel. A 101 that
// does not answer the handshake is answered 502.
func (st *stream) switchWebSocket(h httpmsg.Header) error {
	w := &st.w
	if !st.ws.on {
		return errNoTunnel
	}
	if !httpmsg.EqualFold(h.Get("Upgrade"), "websocket") || h.Get("Sec-WebSocket-Accept") != httpmsg.WebSocketAccept(st.ws.key) {
		st.WriteHead(http.StatusBadGateway, nil, 0)
		return errBadSwitch
	}
	blk := appendStatus(w.hbuf[:0], http.StatusOK)
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Sec-WebSocket-Accept") {
			blk = appendField(blk, f.Name, f.Value)
		}
	}
	w.hbuf, w.status, w.bodyLen = blk, http.StatusOK, -1
	st.ws.switched = true
	return nil
}

// tunnel is Tunnel on a stream: after switchWebSocket, the 200 goes out
// and the copiers start; the handler returns at once.
func (st *stream) tunnel(up net.Conn, pre []byte) error {
	if !st.ws.switched || st.ws.tunneled {
		up.Close()
		return errNoTunnel
	}
	if err := st.send(nil, false); err != nil {
		up.Close()
		return err
	}
	c := st.c
	c.mu.Lock()
	st.ws.up, st.ws.tunneled = up, true
	if st.err != nil {
		up.SetDeadline(aLongTimeAgo) // reset before it started
	}
	c.mu.Unlock()
	t := &wsTunnel{st: st, up: up, pre: append([]byte(nil), pre...), downDone: make(chan struct{})}
	if r, ok := up.(httpmsg.TunnelReporter); ok {
		r.TunnelStarted(t.end)
	}
	panics.Go("h2 websocket to client", t.toClient)
	panics.Go("h2 websocket to upstream", t.toUpstream)
	return nil
}

// aLongTimeAgo is a deadline that wakes a blocked read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

// wsTunnel carries one WebSocket stream.
type wsTunnel struct {
	st         *stream
	up         net.Conn
	pre        []byte
	toUp, toCl atomic.Int64
	how        atomic.Pointer[string] // the side that ended first
	downDone   chan struct{}          // toClient returned
}

// first records how the tunnel ended, once.
func (t *wsTunnel) first(how string) { t.how.CompareAndSwap(nil, &how) }

// end ends the tunnel both ways (a reload's drain); any goroutine.
func (t *wsTunnel) end() {
	c := t.st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.streams[t.st.id] == t.st { // not ended already (finish)
		c.resetLocked(t.st, codeCancel, "")
	}
}

// toClient copies the upstream's bytes to the stream as DATA, as the
// client's windows allow; the upstream's end of stream is END_STREAM.
func (t *wsTunnel) toClient() {
	defer close(t.downDone)
	st := t.st
	defer t.upstreamDone()
	if len(t.pre) > 0 {
		if st.send(t.pre, false) != nil {
			t.clientGone()
			return
		}
		t.toCl.Add(int64(len(t.pre)))
		t.pre = nil
	}
	// A quiet tunnel waits on a small buffer; a read that fills it
	// takes a pooled wsChunk one until a read comes short.
	small := make([]byte, wsSmall)
	buf := small
	defer func() {
		if len(buf) == wsChunk {
			wsBufs.Put((*[wsChunk]byte)(buf))
		}
	}()
	for {
		n, err := t.up.Read(buf)
		if n > 0 {
			if st.send(buf[:n], false) != nil {
				t.clientGone()
				return
			}
			t.toCl.Add(int64(n))
		}
		switch {
		case n == len(buf) && len(buf) == wsSmall:
			buf = wsBufs.Get().(*[wsChunk]byte)[:]
		case n < len(buf) && len(buf) == wsChunk:
			wsBufs.Put((*[wsChunk]byte)(buf))
			buf = small
		}
		switch {
		case err == io.EOF:
			t.first(httpmsg.TunnelServerClosed)
			st.send(nil, true)
			return
		case err != nil:
			t.upstreamFailed()
			return
		}
	}
}

// upstreamDone notes that no more upstream bytes will come.
func (t *wsTunnel) upstreamDone() {
	c := t.st.c
	c.mu.Lock()
	t.st.ws.upDone = true
	t.st.cond.Broadcast()
	c.mu.Unlock()
}

// clientGone is a write to the stream that failed: the client reset it,
// the connection closed, or the tunnel was ended.
func (t *wsTunnel) clientGone() {
	c := t.st.c
	c.mu.Lock()
	peer := t.st.peerReset
	c.mu.Unlock()
	if peer {
		t.first(httpmsg.TunnelClientClosed)
	} else {
		t.first(httpmsg.TunnelError)
	}
}

// upstreamFailed is a failed upstream read or write: the stream is
// reset with CONNECT_ERROR, unless it ended first.
func (t *wsTunnel) upstreamFailed() {
	c := t.st.c
	c.mu.Lock()
	ended := t.st.err != nil
	c.resetLocked(t.st, codeConnect, "")
	peer := t.st.peerReset
	c.mu.Unlock()
	if ended && peer {
		t.first(httpmsg.TunnelClientClosed)
		return
	}
	t.first(httpmsg.TunnelError)
}

// toUpstream writes the client's DATA to the upstream straight from
// the stream's receive buffer; END_STREAM half-closes it. It ends the
// tunnel once both directions are done.
func (t *wsTunnel) toUpstream() {
	defer t.finish()
	for {
		p, err := t.st.tunnelPeek()
		if len(p) > 0 {
			n, werr := t.up.Write(p)
			t.st.tunnelConsumed(n)
			t.toUp.Add(int64(n))
			if werr != nil {
				t.upstreamFailed()
				return
			}
			continue
		}
		switch {
		case err == io.EOF:
			t.first(httpmsg.TunnelClientClosed)
			if cw, ok := t.up.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			t.st.waitUpstreamDone()
			return
		case errors.Is(err, errTunnelEnd):
			// The upstream ended: a WebSocket server closes its
			// connection once the closing handshake is done (RFC 6455
			// §7.1.1), so what the client still sends has nowhere to
			// go. finish asks it to stop (RST_STREAM NO_ERROR after our
			// END_STREAM) rather than wait for a browser that keeps
			// its side open (chromium does, for seconds).
			return
		case err != nil:
			t.clientGone()
			return
		}
	}
}

// finish ends the stream and the upstream connection once both copiers
// are done, and reports the tunnel.
func (t *wsTunnel) finish() {
	t.up.SetDeadline(aLongTimeAgo) // wakes toClient's read
	<-t.downDone
	t.endStream()
	how := httpmsg.TunnelError
	if p := t.how.Load(); p != nil {
		how = *p
	}
	if r, ok := t.up.(httpmsg.TunnelReporter); ok {
		r.TunnelEnded(httpmsg.TunnelEnd{ToUpstream: t.toUp.Load(), ToClient: t.toCl.Load(), How: how})
	}
	t.up.Close()
}

// endStream ends the tunnel's stream.
func (t *wsTunnel) endStream() {
	st := t.st
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock() // the stream's end calls the net.Conn (armIdleLocked): a panic leaves the lock free
	if !st.w.ended {
		c.resetLocked(st, codeCancel, "")
	}
	c.endLocalLocked(st)
	st.ctx.cancel()
	if st.timer != nil {
		st.timer.Stop()
	}
}

// tunnelPeek waits for the client's DATA on a tunneled stream and
// returns a view of the bytes received, consumed by tunnelConsumed;
// once they are written, the upstream's end is errTunnelEnd.
// Unlike a body read it has no stall bound: a WebSocket may stay silent
// for long. The view stays valid while the read loop appends: only
// tunnelConsumed moves or drops what it views.
func (st *stream) tunnelPeek() ([]byte, error) {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if len(st.in) > st.inOff {
			return st.in[st.inOff:], nil
		}
		switch {
		case st.err != nil:
			return nil, st.err
		case st.bodyClosed, st.ws.upDone:
			return nil, errTunnelEnd
		case st.remoteClosed:
			return nil, io.EOF
		}
		st.cond.Wait()
	}
}

// tunnelConsumed gives n bytes written upstream back to the windows. A
// buffer grown by a burst is let go once emptied, so that a quiet
// tunnel holds none.
func (st *stream) tunnelConsumed(n int) {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st.inOff += n
	if st.inOff == len(st.in) {
		st.in, st.inOff = st.in[:0], 0
		if cap(st.in) > wsChunk {
			st.in = nil
		}
	}
	c.creditLocked(st, n)
}

// waitUpstreamDone waits, after the client's END_STREAM, until the
// upstream's side ended too or the stream was reset.
func (st *stream) waitUpstreamDone() {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for !st.ws.upDone && st.err == nil {
		st.cond.Wait()
	}
}
