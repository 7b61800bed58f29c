package h2conn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// stream is one request and its response. The read loop fills it and
// delivers its body; its handler goroutine reads the body and writes
// the response. Fields under "c.mu" are shared between them.
type stream struct {
	c  *conn
	id uint32

	req     httpmsg.Request
	fields  httpmsg.Header
	trailer httpmsg.Header // the request's trailers, once the body ended
	cl      int64          // the declared content-length; -1: none
	body    reqBody
	ctx     streamCtx
	w       respState // the handler goroutine's
	ws      wsState   // an extended CONNECT (websocket.go)

	// c.mu
	cond         sync.Cond // the body reader waiting for DATA
	in           []byte    // body bytes not yet read
	inOff        int
	received     int64
	remoteClosed bool  // END_STREAM (or trailers) came
	reset        bool  // RST_STREAM sent or received
	peerReset    bool  // the client's RST_STREAM: its later frames are errors
	err          error // why reads and writes fail (reset, connection closed)
	bodyClosed   bool  // the handler returned: DATA is dropped
	recvWindow   int64
	unacked      int64
	sendWindow   int64
	readDL       time.Time // the handler's body read deadline
	timer        *time.Timer
}

var (
	errStreamReset = errors.New("h2conn: stream reset")
	errStall       = errors.New("h2conn: stream stalled (no flow-control window or body bytes within the stall timeout)")
	errBodyClosed  = errors.New("h2conn: request body read after its handler returned")
	errNoTunnel    = errors.New("h2conn: an HTTP/2 stream cannot be tunneled")
	errHeadWritten = errors.New("h2conn: final head already written")
	errBodyTooLong = errors.New("h2conn: body longer than its declared length")
	errNoHead      = errors.New("h2conn: body written before the head")
)

// newStream makes the stream a HEADERS frame opens; c.mu is held.
func newStream(c *conn, id uint32) *stream {
	st := &stream{c: c, id: id, cl: -1, recvWindow: streamWindow, sendWindow: c.initWindow}
	st.cond.L = &c.mu
	st.body.st = st
	st.fields = st.w.fieldsArr[:0]
	st.w.hbuf, st.w.dbuf = st.w.hbufArr[:0], st.w.dbufArr[:0]
	st.req.ProtoMajor = 2
	return st
}

// prepare completes the request before its handler starts.
func (st *stream) prepare(ended bool) {
	c := st.c
	r := &st.req
	if r.Method == "CONNECT" && r.Target == "" {
		r.Target = r.Host
	}
	r.Header = st.fields
	r.RemoteAddr, r.LocalAddr = c.remote, c.local
	r.TLS, r.TLSVersion, r.ServerName, r.ClientCert = c.tls, c.tlsVersion, c.serverName, c.clientCert
	r.Ctx = &st.ctx
	switch {
	case ended, st.ws.on:
		// An extended CONNECT's DATA is the tunnel's, not a body.
		r.ContentLength = 0
	default:
		r.ContentLength = st.cl
		r.Body = &st.body
		r.Trailer = st.trailers
	}
	st.w.head = r.Method == http.MethodHead
}

// trailers returns the request's trailers once the body ended.
func (st *stream) trailers() httpmsg.Header {
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	return st.trailer
}

// run serves the request and ends the stream.
func (st *stream) run() {
	defer func() {
		if v := recover(); v != nil {
			if !panics.IsAbort(v) {
				panics.Report("h2 stream", v, slog.String("method", st.req.Method))
			}
			st.w.aborted = true
		}
		st.finish()
	}()
	st.c.cfg.Handler.ServeProxy(st, &st.req)
}

// closeLocked fails the stream's reads and writes with err and cancels
// its context; c.mu is held.
func (st *stream) closeLocked(err error) {
	if st.err == nil {
		st.err = err
	}
	st.cond.Broadcast()
	st.ctx.cancel()
	if st.ws.up != nil {
		st.ws.up.SetDeadline(aLongTimeAgo) // wakes the tunnel's copiers
	}
}

// removeLocked forgets a stream whose exchange is over; c.mu is held.
func (c *conn) removeLocked(st *stream) {
	if c.streams[st.id] != st {
		return
	}
	delete(c.streams, st.id)
	if !st.reset {
		c.open--
	}
	st.bodyClosed = true
	if n := len(st.in) - st.inOff; n > 0 {
		c.creditLocked(nil, n)
	}
	st.in, st.inOff = nil, 0
	c.armIdleLocked()
}

// answerLocked answers a refused request with status and a short text,
// and reports it; c.mu is held.
func (c *conn) answerLocked(st *stream, status int, reason string) {
	c.refuse(status, reason)
	credit := c.credit
	c.answerPlainLocked(st, status)
	c.credit = credit // a client's mistake earns it nothing
}

// endLocalLocked closes this side of st once its response is queued: a
// client still sending is asked to stop (RST_STREAM NO_ERROR, RFC 9113
// §8.1), and the stream is forgotten. c.mu is held.
func (c *conn) endLocalLocked(st *stream) {
	if !st.remoteClosed && !st.reset {
		st.reset = true
		c.open--
		c.out = appendRST(c.out, st.id, codeNo)
		c.noteReset(st.id)
		st.closeLocked(errStreamReset)
	}
	c.wakeWriterLocked()
	c.removeLocked(st)
}

// reqBody is a request body as the handler reads it.
type reqBody struct{ st *stream }

// Read reads body bytes as the client sends them. It gives the bytes
// back to the flow-control windows, so that a body is read only as fast
// as the handler takes it.
func (b *reqBody) Read(p []byte) (int, error) {
	st := b.st
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var stallAt time.Time
	if c.cfg.StallTimeout > 0 {
		stallAt = time.Now().Add(c.cfg.StallTimeout)
	}
	for {
		if st.bodyClosed {
			return 0, errBodyClosed
		}
		if n := len(st.in) - st.inOff; n > 0 {
			k := copy(p, st.in[st.inOff:])
			st.inOff += k
			if st.inOff == len(st.in) {
				st.in, st.inOff = st.in[:0], 0
			}
			c.creditLocked(st, k)
			return k, nil
		}
		switch {
		case st.err != nil:
			return 0, st.err
		case st.remoteClosed:
			return 0, io.EOF
		case len(p) == 0:
			return 0, nil
		}
		if err := st.waitLocked(stallAt, st.readDL); err != nil {
			return 0, err
		}
	}
}

// waitLocked waits on st.cond until woken, or until stallAt or dl (zero:
// none) passes; then it returns an error. c.mu is held.
func (st *stream) waitLocked(stallAt, dl time.Time) error {
	now := time.Now()
	if !dl.IsZero() && !now.Before(dl) {
		return errDeadline
	}
	if !stallAt.IsZero() && !now.Before(stallAt) {
		return errStall
	}
	at := stallAt
	if at.IsZero() || (!dl.IsZero() && dl.Before(at)) {
		at = dl
	}
	if !at.IsZero() {
		st.armTimer(at.Sub(now))
	}
	st.cond.Wait()
	return nil
}

// armTimer wakes st's waiters after d.
func (st *stream) armTimer(d time.Duration) {
	if st.timer == nil {
		st.timer = time.AfterFunc(d, st.wake)
		return
	}
	st.timer.Reset(d)
}

func (st *stream) wake() {
	st.c.mu.Lock()
	st.cond.Broadcast()
	st.c.sendCond.Broadcast()
	st.c.mu.Unlock()
}

// errDeadline is a body read past the handler's read deadline.
var errDeadline = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "h2conn: request body read deadline exceeded" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// streamCtx is a stream's context: it ends when the stream is reset or
// the connection closes. Its channel is made only when asked for.
type streamCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Deadline reports none.
func (x *streamCtx) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns a channel closed when the stream ends early.
func (x *streamCtx) Done() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done == nil {
		if x.err != nil {
			return closedChan
		}
		x.done = make(chan struct{})
	}
	return x.done
}

// Err returns context.Canceled once the stream ended early.
func (x *streamCtx) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// Value returns nil: a stream's context carries no values.
func (x *streamCtx) Value(any) any { return nil }

func (x *streamCtx) cancel() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err == nil {
		x.err = context.Canceled
		if x.done != nil {
			close(x.done)
		}
	}
}

var _ context.Context = (*streamCtx)(nil)
