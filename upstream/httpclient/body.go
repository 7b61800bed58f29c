package httpclient

import (
	"io"
)

// respond fills resp from the parsed head: a 101 hands the raw connection
// over, a response without a body ends the exchange at once, any other
// gets a body that ends it at EOF or Close.
func (c *conn) respond(req *Request, resp *Response, hasBody bool) {
	h := &c.head
	*resp = Response{Status: h.Status, Header: h.Header, ContentLength: h.ContentLength}
	if h.Status == 101 {
		if c.stop != nil {
			c.stop() // the caller owns the tunnel and its cancellation
			c.stop = nil
		}
		c.detach()
		resp.ContentLength = 0
		resp.Conn = c.nc
		c.freeSlot()
		if n := c.rb.w - c.rb.r; n > 0 {
			resp.Pre = append([]byte(nil), c.rb.b[c.rb.r:c.rb.w]...)
		}
		c.putReadBuf()
		if !hasBody { // else a body writer may still hold it (then it is left to the GC)
			c.bw.Reset(nil)
			writers.Put(c.bw)
		}
		c.bw = nil
		return
	}
	reusable := !h.Close && req.Header.Get("Upgrade") == ""
	noBody := req.Method == "HEAD" || h.Status == 204 || h.Status == 304 || (h.ContentLength == 0 && !h.Chunked)
	if noBody {
		// Lifetime: release below hands the read buffer the head views
		// back to its pool and the connection (with c.head) to the next
		// exchange, before the caller has used the fields: it gets its
		// own copy (one array for the strings; bodyless answers only).
		resp.Header = ownHeader(h.Header)
		resp.ContentLength = 0
		if req.Method == "HEAD" && h.ContentLength > 0 {
			resp.ContentLength = h.ContentLength // announced, not sent
		}
		c.release(reusable, hasBody)
		return
	}
	c.body.start(resp, reusable, hasBody)
	resp.Body = &c.body
}

// respBody is a response body: Content-Length, chunked, or delimited by
// the server closing. It lives in its conn (one exchange at a time).
// Reading it to EOF and then closing it pools the connection; closing it
// before EOF closes the connection.
type respBody struct {
	c        *conn
	resp     *Response
	left     int64 // Content-Length bytes still to read; -1: not length-framed
	chunked  bool
	ck       chunkReader
	eof      bool
	closed   bool
	reusable bool
	hasBody  bool
}

func (b *respBody) start(resp *Response, reusable, hasBody bool) {
	h := &b.c.head
	*b = respBody{c: b.c, resp: resp, left: -1, reusable: reusable, hasBody: hasBody}
	switch {
	case h.Chunked:
		b.chunked = true
		b.ck.reset(&resp.Trailer)
	case h.ContentLength >= 0:
		b.left = h.ContentLength
	default:
		b.reusable = false // read until the server closes
	}
}

func (b *respBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBodyClosed
	}
	if b.eof {
		return 0, io.EOF
	}
	var n int
	var err error
	switch {
	case b.chunked:
		n, err = b.ck.read(b.c, p)
	case b.left >= 0:
		n, err = b.readFixed(p)
	default:
		n, err = b.c.readRaw(p)
	}
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// readFixed reads a Content-Length body.
func (b *respBody) readFixed(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.readRaw(p)
	b.left -= int64(n)
	if b.left == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// readRaw reads buffered bytes first, then from the socket straight into p.
func (c *conn) readRaw(p []byte) (int, error) {
	rb := c.rb
	if rb.w > rb.r {
		n := copy(p, rb.b[rb.r:rb.w])
		rb.r += n
		return n, nil
	}
	n, err := c.nc.Read(p)
	c.nrd += int64(n)
	if n > 0 {
		return n, nil
	}
	return n, err
}

// Close ends the exchange: after EOF the connection may be pooled; before
// it the connection is closed.
func (b *respBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if b.eof {
		b.c.release(b.reusable, b.hasBody)
	} else {
		b.c.drop()
	}
	return nil
}
