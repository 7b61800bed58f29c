package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// conn is one connection to a server. It serves one exchange at a time;
// between exchanges it sits in its hostPool without buffers.
type conn struct {
	nc     net.Conn
	hp     *hostPool
	cr     countingReader
	br     *bufio.Reader
	bw     *bufio.Writer
	abort  func() // closes nc; bound once for context.AfterFunc
	probe  *prober
	idleAt int64 // monotonic ns when it was pooled
	reused bool  // it served an earlier exchange

	// Request body streaming: the writer goroutine reports on wdone; mu
	// orders its response-timeout arming against the reader's head end.
	wdone    chan error
	mu       sync.Mutex
	headDone bool
	bodyErr  error // the request body's read error, if it failed
}

func newConn(nc net.Conn, hp *hostPool) *conn {
	c := &conn{nc: nc, hp: hp, cr: countingReader{c: nc}, wdone: make(chan error, 1)}
	c.abort = func() { c.nc.Close() }
	c.probe = newProber(nc)
	return c
}

// countingReader counts the bytes of the current exchange and caps the
// response head.
type countingReader struct {
	c     net.Conn
	n     int64
	limit int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n >= r.limit {
		return 0, errHeaderTooLarge
	}
	n, err := r.c.Read(p)
	r.n += int64(n)
	return n, err
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// roundTrip runs one exchange. retry reports that it failed on a reused
// connection before the server sent anything, for a request that may be
// sent again.
func (c *conn) roundTrip(req *http.Request) (resp *http.Response, err error, retry bool) {
	ctx := req.Context()
	hasBody := req.Body != nil && req.Body != http.NoBody
	var stop func() bool
	if ctx.Done() != nil {
		if err := ctx.Err(); err != nil {
			c.nc.Close()
			closeBody(req)
			return nil, err, false
		}
		stop = context.AfterFunc(ctx, c.abort)
	}
	c.br, c.bw = readers.Get().(*bufio.Reader), writers.Get().(*bufio.Writer)
	c.br.Reset(&c.cr)
	c.bw.Reset(c.nc)
	c.cr.n, c.cr.limit = 0, maxHeaderBytes
	if err := writeHead(c.bw, req, hasBody); err != nil {
		c.drop(stop)
		closeBody(req)
		return nil, &Error{Kind: KindRequest, Addr: c.hp.addr, Err: err}, false
	}
	if hasBody {
		c.headDone, c.bodyErr = false, nil
		go c.writeBody(req, c.bw)
	} else {
		if err := c.bw.Flush(); err != nil {
			c.drop(stop)
			return nil, c.failure(ctx, KindWrite, err), c.reused
		}
		c.armTimeout()
	}
	resp, err = c.readHead(req, hasBody)
	if err != nil {
		c.drop(stop)
		// Only the keep-alive race (the server closed the idle connection
		// as the request went out: EOF or reset before any byte) is
		// retried; a timeout is not, or the wait would double.
		retry = c.reused && !hasBody && c.cr.n == 0 && idempotent(req.Method) && !isTimeout(err)
		return nil, c.failure(ctx, kindOf(err), err), retry
	}
	if resp.StatusCode == http.StatusSwitchingProtocols && !upgradeAgreed(req.Header, resp.Header) {
		c.drop(stop)
		return nil, &Error{Kind: KindProtocol, Addr: c.hp.addr, Err: errBadSwitch}, false
	}
	return c.wrap(req, resp, hasBody, stop), nil, false
}

// upgradeAgreed reports whether a 101 answers an upgrade the request asked
// for: the request offered an Upgrade and the response names the same
// protocol (RFC 9110 §7.8). Any other 101 would turn the client connection
// into a raw pipe nobody asked for.
func upgradeAgreed(req, resp http.Header) bool {
	chosen := strings.TrimSpace(resp.Get("Upgrade"))
	return chosen != "" && httpsyntax.HasToken(req["Upgrade"], chosen)
}

// armTimeout starts the response-header timeout; for a request with a
// body the writer calls it once the body is sent.
func (c *conn) armTimeout() {
	if t := c.hp.t.respTimeout; t > 0 {
		_ = c.nc.SetReadDeadline(time.Now().Add(t))
	}
}

// readHead reads the response head, skipping 1xx answers other than 101
// (reported to an httptrace.ClientTrace's Got1xxResponse).
func (c *conn) readHead(req *http.Request, hasBody bool) (*http.Response, error) {
	for n1xx := 0; ; n1xx++ {
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if code < 100 || code >= 200 || code == http.StatusSwitchingProtocols {
			c.endHead(hasBody)
			return resp, nil
		}
		if n1xx >= 5 {
			return nil, errTooMany1xx
		}
		if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.Got1xxResponse != nil {
			if err := tr.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// endHead stops the response-header timeout and the head size cap.
func (c *conn) endHead(hasBody bool) {
	c.cr.limit = math.MaxInt64
	if hasBody {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.headDone = true
	}
	if c.hp.t.respTimeout > 0 {
		_ = c.nc.SetReadDeadline(time.Time{})
	}
}

// failure turns a round-trip error into what RoundTrip returns: the
// context's error when it ended, the request body's read error when that
// broke the exchange, or an *Error.
func (c *conn) failure(ctx context.Context, k Kind, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.mu.Lock()
	berr := c.bodyErr
	c.mu.Unlock()
	if berr != nil {
		return berr
	}
	return &Error{Kind: k, Addr: c.hp.addr, Err: err}
}

// kindOf tells a transport failure from a response that is not HTTP.
func kindOf(err error) Kind {
	var ne net.Error
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) {
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
// buffers are not pooled: a body writer may still hold the writer.
func (c *conn) drop(stop func() bool) {
	if stop != nil {
		stop()
	}
	c.nc.Close()
	c.br, c.bw = nil, nil
}

// release ends an exchange whose response was read to EOF: the connection
// goes back to the pool when nothing about its framing is in doubt.
func (c *conn) release(stop func() bool, reusable, hasBody bool) {
	if stop != nil && !stop() {
		reusable = false // the context ended: abort closes the connection
	}
	if reusable && hasBody {
		select {
		case err := <-c.wdone:
			reusable = err == nil
		default:
			reusable = false // the request body is still being sent
		}
	}
	if !reusable || c.br.Buffered() > 0 {
		c.drop(nil)
		return
	}
	c.br.Reset(nil)
	c.bw.Reset(nil)
	readers.Put(c.br)
	writers.Put(c.bw)
	c.br, c.bw = nil, nil
	c.hp.put(c)
}
