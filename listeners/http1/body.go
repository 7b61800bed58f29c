package http1

import (
	"io"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

type bodyKind uint8

const (
	bodyNone bodyKind = iota
	bodyLength
	bodyChunked
)

// body is the request body reader: it yields the bytes the framing
// allows, first from the read buffer, then from the connection, and never
// a byte beyond the body.
type body struct {
	x       *exchange
	kind    bodyKind
	n       int64 // bodyLength: bytes left
	err     error // sticky: io.EOF at the end, or what broke the body
	expect  bool  // Expect: 100-continue not yet answered
	started bool  // the handler read the body
	base    int   // bodyChunked: where the body's room in x.buf starts
	dec     http1.Chunked
}

func (b *body) reset(k bodyKind, n int64) {
	b.kind, b.n, b.err, b.expect, b.started = k, n, nil, false, false
	b.dec.Reset()
	if k == bodyNone {
		b.err = io.EOF
	}
}

// done reports whether the whole body was read.
func (b *body) done() bool { return b.err == io.EOF }

// canKeep reports, when the response head is written, whether the
// connection may persist as far as the body is concerned: a client that
// waits for 100 Continue and was never told may or may not send its body,
// and a long unread rest is not worth draining.
func (b *body) canKeep() bool {
	switch {
	case b.done():
		return true
	case b.err != nil, b.expect:
		return false
	}
	return b.kind != bodyLength || b.n <= maxDrain
}

// Read implements io.Reader for the handler.
func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	b.started = true
	if b.expect {
		b.expect = false
		if err := b.x.rw.sendContinue(); err != nil {
			b.err = err
			return 0, err
		}
	}
	var n int
	var err error
	if b.kind == bodyLength {
		n, err = b.readLength(p)
	} else {
		n, err = b.readChunked(p)
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// readLength reads a Content-Length body: buffered bytes first, then
// straight from the connection into p.
func (b *body) readLength(p []byte) (int, error) {
	x := b.x
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	var n int
	var err error
	if x.r < x.w {
		n = copy(p, x.buf[x.r:x.w])
		x.r += n
	} else {
		n, err = x.c.Read(p)
	}
	b.n -= int64(n)
	switch {
	case b.n == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// trailers returns the chunked body's trailer fields (Request.Trailer).
func (b *body) trailers() httpmsg.Header {
	if !b.done() {
		return nil
	}
	return b.dec.Trailer
}

// drain reads and drops what the handler left of the body, up to maxDrain
// bytes and for at most the read-header timeout, and reports whether the
// body ended so that the next request can be read.
func (b *body) drain() bool {
	if b.done() {
		return true
	}
	if b.err != nil || !b.canKeep() {
		return false
	}
	x := b.x
	x.setDeadline(time.Now().Add(x.s.readHeaderTimeout()))
	scratch := x.rw.buf()
	scratch = scratch[:cap(scratch)] // the response is out
	for total := 0; total <= maxDrain; {
		n, err := b.Read(scratch)
		total += n
		switch {
		case err == io.EOF:
			return true
		case err != nil:
			return false
		}
	}
	return false
}

// minBodyRoom is the least room behind a head a chunked body is read into;
// less moves the buffered body bytes to a buffer of their own.
const minBodyRoom = 512

// startChunked readies the room behind the head for a chunked body: the
// head's strings stay where they are, the body's framing is read and
// decoded behind them.
func (b *body) startChunked() {
	x := b.x
	if len(x.buf)-x.r < minBodyRoom {
		// The head fills the buffer: its strings keep the old array alive;
		// it is not reused by this exchange (nor pooled).
		nb := make([]byte, smallBuf)
		x.w = copy(nb, x.buf[x.r:x.w])
		x.buf, x.small, x.r = nb, nb, 0
	}
	b.base = x.r
}

// readChunked decodes a chunked body into p from the buffered bytes, then
// from bytes read into the room behind the head. Bytes after the body
// stay buffered for the next request.
func (b *body) readChunked(p []byte) (int, error) {
	x := b.x
	for {
		if x.r < x.w {
			c, n, err := b.dec.Decode(x.buf[x.r:x.w], p)
			x.r += c
			switch {
			case err != nil:
				return n, err
			case b.dec.Done():
				return n, io.EOF
			case n > 0:
				return n, nil
			}
		}
		if x.r == x.w {
			x.r, x.w = b.base, b.base
		}
		m, err := x.c.Read(x.buf[x.w:])
		x.w += m
		if m == 0 {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
}
