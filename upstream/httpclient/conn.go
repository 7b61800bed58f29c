package httpclient

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// conn is one connection to a server. It serves one exchange at a time;
// between exchanges it sits in its hostPool without buffers.
type conn struct {
	nc     net.Conn
	hp     *hostPool
	abort  func() // closes nc; bound once for context.AfterFunc
	probe  *prober
	idleAt int64          // monotonic ns when it was pooled
	reused bool           // it served an earlier exchange
	dialNs int64          // how long opening it took
	slot   bool           // it holds a slot of the pool's connection limiter
	client netip.AddrPort // the client its PROXY header named (send_proxy)

	cx   *Canceler     // the exchange's, if any
	rb   *readBuf      // response bytes, during an exchange
	bw   *bufio.Writer // request bytes, during an exchange
	nrd  int64         // bytes read in this exchange
	head http1.Response
	body respBody
	stop func() bool // stops the context watch

	// Request body streaming: the writer goroutine reports on wdone; mu
	// orders its response-timeout arming against the reader's head end.
	wdone    chan error
	mu       sync.Mutex
	headDone bool
	// respTimeout is the current exchange's response-header timeout:
	// the request's own or the pool's.
	respTimeout time.Duration
	bodyErr     error // the request body's read error, if it failed
}

func newConn(nc net.Conn, hp *hostPool) *conn {
	c := &conn{nc: nc, hp: hp, wdone: make(chan error, 1)}
	c.abort = func() { c.nc.Close() }
	c.probe = newProber(nc)
	c.body.c = c
	return c
}

// readBuf is a connection's read buffer while an exchange runs.
type readBuf struct {
	b    []byte
	r, w int
}

const readBufSize = 4 << 10

var (
	readBufs = sync.Pool{New: func() any { return &readBuf{b: make([]byte, readBufSize)} }}
	writers  = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// exchange runs one request. retry reports that it failed on a reused
// connection before the server sent anything, for a request that may be
// sent again.
//
// bb holds the body's first bytes (nil without a body); from here on the
// body writer, or a failure before it starts, returns it to its pool.
func (c *conn) exchange(req *Request, resp *Response, bb *bodyBuf) (err error, retry bool) {
	ctx := req.context()
	hasBody := bb != nil
	c.stop, c.cx = nil, req.Cancel
	c.respTimeout = c.hp.t.respTimeout
	if req.ResponseTimeout > 0 {
		c.respTimeout = req.ResponseTimeout
	}
	if c.cx != nil && !c.cx.attach(c.nc) {
		c.close()
		c.cx = nil
		putBodyBuf(bb)
		return errCanceled, false
	}
	if ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			c.drop()
			putBodyBuf(bb)
			return err, false
		}
		c.stop = context.AfterFunc(ctx, c.abort)
	}
	c.rb, c.bw = readBufs.Get().(*readBuf), writers.Get().(*bufio.Writer)
	c.rb.r, c.rb.w, c.nrd = 0, 0, 0
	c.bw.Reset(c.nc)
	cl := req.ContentLength
	if !hasBody {
		cl = 0
	}
	b, err := http1.AppendRequestHead(c.bw.AvailableBuffer(), req.Method, req.Target, req.Host, req.Header, cl)
	if err != nil {
		// Nothing was written: the connection stays as good as it was.
		c.release(true, false)
		putBodyBuf(bb)
		return &RequestError{Status: 400, Addr: c.hp.addr, Err: err}, false
	}
	c.bw.Write(b)
	if hasBody {
		c.headDone, c.bodyErr = false, nil
		go c.writeBody(outBody{r: req.Body, n: req.ContentLength, trailer: req.Trailer}, c.bw, bb)
	} else {
		if err := c.bw.Flush(); err != nil {
			c.drop()
			return c.failure(ctx, KindWrite, err), c.reused
		}
		c.armTimeout()
	}
	if err := c.readHead(req, hasBody); err != nil {
		c.drop()
		// Only the keep-alive race (the server closed the idle connection
		// as the request went out: EOF or reset before any byte) is
		// retried; a timeout is not, or the wait would double.
		retry = c.reused && !hasBody && c.nrd == 0 && idempotent(req.Method) && !isTimeout(err)
		return c.failure(ctx, kindOf(err), err), retry
	}
	if c.head.Status == 101 && !upgradeAgreed(req.Header, c.head.Header) {
		c.drop()
		return &Error{Kind: KindProtocol, Addr: c.hp.addr, Err: errBadSwitch}, false
	}
	c.respond(req, resp, hasBody)
	return nil, false
}

// upgradeAgreed reports whether a 101 answers an upgrade the request asked
// for: the request offered an Upgrade and the response names the same
// protocol (RFC 9110 §7.8). Any other 101 would turn the client connection
// into a raw pipe nobody asked for.
func upgradeAgreed(req, resp httpmsg.Header) bool {
	chosen := strings.TrimSpace(resp.Get("Upgrade"))
	if chosen == "" {
		return false
	}
	for _, f := range req {
		if httpmsg.EqualFold(f.Name, "Upgrade") && httpsyntax.ListHas(f.Value, chosen) {
			return true
		}
	}
	return false
}

// armTimeout starts the response-header timeout; for a request with a
// body the writer calls it once the body is sent.
func (c *conn) armTimeout() {
	if t := c.respTimeout; t > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(t))
	}
}

// readHead reads the response head into c.head, skipping 1xx answers other
// than 101 (shown to req.OnInformational).
func (c *conn) readHead(req *Request, hasBody bool) error {
	for n1xx := 0; ; {
		if err := c.parseHead(); err != nil {
			return err
		}
		code := c.head.Status
		if code >= 200 || code == 101 {
			c.endHead(hasBody)
			return nil
		}
		if n1xx++; n1xx > 5 {
			return errTooMany1xx
		}
		if req.OnInformational != nil {
			if err := req.OnInformational(code, c.head.Header); err != nil {
				return err
			}
		}
	}
}

// parseHead reads until one response head is complete and parses it.
func (c *conn) parseHead() error {
	rb := c.rb
	for {
		if rb.w > rb.r {
			n, err := http1.ParseResponse(rb.b[rb.r:rb.w], &c.head, maxHeaderBytes)
			if err == nil {
				rb.r += n
				return nil
			}
			if !errors.Is(err, http1.ErrIncomplete) {
				return err
			}
		}
		if rb.w-rb.r >= maxHeaderBytes {
			return errHeaderTooLarge
		}
		if err := c.fill(); err != nil {
			return err
		}
	}
}

// fill reads more bytes into the buffer, making room first: unread bytes
// move to the front, and a buffer full of one unfinished head doubles.
func (c *conn) fill() error {
	rb := c.rb
	if rb.r == rb.w {
		rb.r, rb.w = 0, 0
	}
	if rb.w == len(rb.b) {
		if rb.r > 0 {
			rb.w = copy(rb.b, rb.b[rb.r:rb.w])
			rb.r = 0
		} else {
			nb := make([]byte, 2*len(rb.b))
			copy(nb, rb.b[:rb.w])
			rb.b = nb
		}
	}
	n, err := c.nc.Read(rb.b[rb.w:])
	rb.w += n
	c.nrd += int64(n)
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// endHead stops the response-header timeout.
func (c *conn) endHead(hasBody bool) {
	if hasBody {
		c.mu.Lock()
		c.headDone = true
		c.mu.Unlock()
	}
	if c.respTimeout > 0 {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}

// failure turns an exchange error into what Do returns: the context's
// error when it ended, the request body's read error when that broke the
// exchange, or an *Error.
func (c *conn) failure(ctx context.Context, k Kind, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.mu.Lock()
	berr := c.bodyErr
	c.mu.Unlock()
	if berr != nil {
		return &BodyError{Err: berr}
	}
	return &Error{Kind: k, Addr: c.hp.addr, Err: err}
}

// kindOf tells a transport failure from a response that is not HTTP.
func kindOf(err error) Kind {
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrNoProgress) || errors.As(err, &ne) {
		return KindRead
	}
	return KindProtocol
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func idempotent(method string) bool {
	switch method {
	case "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE", "":
		return true
	}
	return false
}

// drop ends an exchange that cannot leave the connection reusable. The
// writer is not pooled: a body writer may still hold it.
func (c *conn) drop() {
	if c.stop != nil {
		c.stop()
		c.stop = nil
	}
	c.detach()
	c.close()
	c.putReadBuf()
	c.bw = nil
}

func putBodyBuf(bb *bodyBuf) {
	if bb != nil {
		bodyBufs.Put(bb)
	}
}

// close closes the connection and frees its limiter slot, once.
func (c *conn) close() {
	c.nc.Close()
	c.freeSlot()
}

// freeSlot gives the connection's limiter slot back (a connection handed
// over as a tunnel no longer counts).
func (c *conn) freeSlot() {
	if c.slot {
		c.slot = false
		c.hp.t.lim.release()
	}
}

// detach releases the exchange's Canceler, if any.
func (c *conn) detach() {
	if c.cx != nil {
		c.cx.detach()
		c.cx = nil
	}
}

// putReadBuf pools the read buffer. Lifetime: the response head's strings
// view it only until the first body read, and a chunked body's trailer
// lives in the decoder's own buffer; the exchange using it has ended
// (release, drop) or handed the connection over (101, Pre copied).
func (c *conn) putReadBuf() {
	if c.rb != nil && len(c.rb.b) == readBufSize {
		readBufs.Put(c.rb)
	}
	c.rb = nil
}

// release ends an exchange whose response was read to EOF: the connection
// goes back to the pool when nothing about its framing is in doubt.
func (c *conn) release(reusable, hasBody bool) {
	if c.stop != nil && !c.stop() {
		reusable = false // the context ended: abort closes the connection
	}
	c.stop = nil
	c.detach()
	if reusable && hasBody {
		select {
		case err := <-c.wdone:
			reusable = err == nil
		default:
			reusable = false // the request body is still being sent
		}
	}
	if !reusable || c.rb.w > c.rb.r {
		c.drop()
		return
	}
	c.putReadBuf()
	// Lifetime: the body writer finished (wdone was received above), so
	// nothing else holds the buffered writer.
	c.bw.Reset(nil)
	writers.Put(c.bw)
	c.bw = nil
	c.hp.put(c)
}
