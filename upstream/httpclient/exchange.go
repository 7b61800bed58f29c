package httpclient

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Request is what the router sends to a server: the head as it goes on the
// wire (the caller has removed hop-by-hop fields and set the forwarding
// ones) and the body.
type Request struct {
	// ResponseTimeout, when non-zero, replaces the pool's
	// response_timeout for this request (a route's own, resolved at
	// load). Zero: the pool's.
	ResponseTimeout time.Duration
	// ConnectTimeout, when non-zero, replaces the pool's connect_timeout
	// for a connection this request opens (a route's own). A pooled
	// connection is reused whatever its dial took. Zero: the pool's.
	ConnectTimeout time.Duration
	Method         string
	// Target is the request-target in origin-form ("/p?q"), or "*" for
	// OPTIONS.
	Target string
	// Host is the Host field sent.
	Host string
	// Header holds the fields to send. Framing fields (Host,
	// Content-Length, Transfer-Encoding, Trailer) in it are skipped: the
	// client frames the body from ContentLength.
	Header httpmsg.Header
	// ContentLength is 0 for no body, -1 for a body of unknown length
	// (sent chunked).
	ContentLength int64
	// Body yields the body; read errors other than io.EOF are the
	// client's and come back as *BodyError.
	Body io.Reader
	// Trailer, when set, is called once Body returned io.EOF; its fields
	// follow a chunked body.
	Trailer func() httpmsg.Header
	// Ctx ends the exchange early (nil: never).
	Ctx context.Context
	// Cancel, when set, can abort the exchange from another goroutine
	// until the response body is closed.
	Cancel *Canceler
	// OnInformational, when set, sees each 1xx response other than 101,
	// which are otherwise skipped; an error fails the exchange.
	OnInformational func(status int, h httpmsg.Header) error
	// Client is the client's address and Local the address it connected
	// to (httpmsg.Request's RemoteAddr and LocalAddr). A pool with
	// send_proxy writes them in the PROXY header of a new connection and
	// gives the request only a connection opened for the same client;
	// other pools ignore them.
	Client, Local netip.AddrPort
}

func (r *Request) context() context.Context {
	if r.Ctx != nil {
		return r.Ctx
	}
	return context.Background()
}

// Response is a server's answer. Header's strings point into the
// connection's read buffer: they are valid until the first Body read.
type Response struct {
	Status int
	Header httpmsg.Header
	// ContentLength is the body length, -1 when unknown (chunked or
	// delimited by the server closing).
	ContentLength int64
	// Body yields the body, nil when the response has none. It must be
	// read to io.EOF or closed; the connection is reused only when it was
	// read to EOF before Close.
	Body io.ReadCloser
	// Trailer holds the trailer fields of a chunked body once Body
	// returned io.EOF; valid until Body.Close.
	Trailer httpmsg.Header
	// Conn and Pre are set for a 101: the raw connection, now the
	// caller's, and bytes already read from it that belong to the tunnel.
	Conn net.Conn
	Pre  []byte
	// Connect is how long opening the connection took (TCP connect and
	// the PROXY header); 0 when a pooled one was reused, and on h2c,
	// whose connections are shared by streams.
	Connect time.Duration
}

// BodyError is a failure to read the request body from the client: the
// exchange failed through no fault of the server.
type BodyError struct{ Err error }

func (e *BodyError) Error() string { return "reading the request body: " + e.Err.Error() }

func (e *BodyError) Unwrap() error { return e.Err }

var errCanceled = errors.New("exchange canceled")

// Do sends req to the server at addr and fills resp once the response
// head arrived: over HTTP/1.1, or over HTTP/2 for an h2c pool (see
// Transport). An idempotent request without a body that fails on a
// reused HTTP/1.1 connection before any response byte (the server closed
// it as the request went out) is sent once more on a new one. Failures
// are *Error values, the context's error when req.Ctx ended, *BodyError
// (the client's body broke) or *RequestError (the request was not sent).
func (t *Transport) Do(addr string, req *Request, resp *Response) error {
	if t.h2 != nil && !t.fellBack(addr) {
		err := t.h2.do(addr, req, resp)
		if !errors.Is(err, errFellBack) {
			return err
		}
		// `protocol h2` with `fallback http1`: the server picked http/1.1; this
		// request (not sent) and the next go over HTTP/1.1.
		t.fallbacks.Store(addr, true)
	}
	var bb *bodyBuf
	if req.Body != nil && req.ContentLength != 0 {
		var err error
		if bb, err = readFirst(req); err != nil {
			return err
		}
	}
	hp := t.host(addr)
	ctx := req.context()
	for attempt := 0; ; attempt++ {
		c, err := hp.get(ctx, req)
		if err != nil {
			if bb != nil {
				bodyBufs.Put(bb) // no writer was started: it is still Do's
			}
			return err
		}
		var connect time.Duration // read now: after the exchange c may serve another
		if !c.reused {
			connect = time.Duration(c.dialNs)
		}
		err, retry := c.exchange(req, resp, bb)
		resp.Connect = connect
		if err == nil || !retry || attempt > 0 || ctx.Err() != nil {
			return err
		}
	}
}

// Canceler aborts an exchange from another goroutine (the router's idle
// watchdog): Cancel closes the connection the exchange is using, so a
// blocked read or write fails at once, and remembers why. It is meant to
// live in a pooled per-request struct: unlike a context, it costs no
// allocation per request. Reset readies it for the next exchange.
type Canceler struct {
	mu    sync.Mutex
	nc    net.Conn // the exchange's connection while it runs (HTTP/1)
	stop  func()   // ends the exchange's stream while it runs (h2c)
	cause error
}

// Cancel aborts the exchange with cause; later calls keep the first cause.
func (c *Canceler) Cancel(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cause == nil {
		c.cause = cause
	}
	if c.nc != nil {
		c.nc.Close()
	}
	if c.stop != nil {
		c.stop()
	}
}

// Cause returns why the exchange was cancelled, or nil.
func (c *Canceler) Cause() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Reset clears the cause and the connection.
func (c *Canceler) Reset() {
	c.mu.Lock()
	c.nc, c.stop, c.cause = nil, nil, nil
	c.mu.Unlock()
}

// attach makes nc the connection Cancel closes; false when the exchange
// was cancelled already.
func (c *Canceler) attach(nc net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nc = nc
	return c.cause == nil
}

// attachStop makes stop what Cancel calls: an HTTP/2 exchange ends its
// own stream, not the connection its neighbours share. False when the
// exchange was cancelled already.
func (c *Canceler) attachStop(stop func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop = stop
	return c.cause == nil
}

// detach ends the exchange's hold on its connection: it was pooled,
// closed or handed over.
func (c *Canceler) detach() {
	c.mu.Lock()
	c.nc, c.stop = nil, nil
	c.mu.Unlock()
}
