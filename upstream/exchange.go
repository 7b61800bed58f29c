package upstream

import (
	"context"
	"io"
	"net"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Request is what the router sends to a server: the head as it goes on the
// wire (the caller has removed hop-by-hop fields and set the forwarding
// ones) and the body.
type Request struct {
	Method string
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
	// OnInformational, when set, sees each 1xx response other than 101,
	// which are otherwise skipped; an error fails the exchange.
	OnInformational func(status int, h httpmsg.Header) error
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
}

// BodyError is a failure to read the request body from the client: the
// exchange failed through no fault of the server.
type BodyError struct{ Err error }

func (e *BodyError) Error() string { return "reading the request body: " + e.Err.Error() }

func (e *BodyError) Unwrap() error { return e.Err }

// Do sends req to the server at addr over HTTP/1.1 and fills resp once
// the response head arrived. An idempotent request without a body that
// fails on a reused connection before any response byte (the server
// closed it as the request went out) is sent once more on a new one.
// Failures are *Error values, the context's error when req.Ctx ended, or
// *BodyError.
func (t *Transport) Do(addr string, req *Request, resp *Response) error {
	hp := t.host(addr)
	ctx := req.context()
	for attempt := 0; ; attempt++ {
		c, err := hp.get(ctx)
		if err != nil {
			return err
		}
		err, retry := c.exchange(req, resp)
		if err == nil || !retry || attempt > 0 || ctx.Err() != nil {
			return err
		}
	}
}
