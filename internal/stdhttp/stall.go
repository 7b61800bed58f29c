package stdhttp

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// The stall timeout (Options.StallTimeout) is a deadline on the stream
// that is pushed back whenever the handler writes or reads: a client that
// takes no response bytes (its flow-control window stays shut) or sends
// no body bytes for that long has its stream reset (x/net's write
// deadline sends RST_STREAM) or its body read failed. Moving a deadline
// costs a message to the connection's serve loop, so it is moved only
// once an eighth of the timeout has passed since the last move: a stall
// is cut between 7/8 of the timeout and the timeout after the last
// progress.

// armWrite pushes the stream's write deadline back.
func (w *writer) armWrite() {
	if w.stall <= 0 {
		return
	}
	now := time.Now()
	if d := now.Add(w.stall); d.Sub(w.wdl) > w.stall/8 {
		w.wdl = d
		_ = w.rc.SetWriteDeadline(d)
	}
}

// body is an HTTP/2 (or HTTP/3) request body as the handler reads it.
// With a content-length, a read that has room for all that is left reads
// until it has it, so a body that ends short (x/net fails the read at
// END_STREAM) fails the first read, before anything is forwarded, when
// it fits the first read.
//
// A body is allocated per request and shares nothing with the pooled
// state: its reader may run on another goroutine (the upstream client's
// body writer), and the router ends every such read before its handler
// returns, but should one come late it finds the body closed and touches
// nothing that another request uses. Its read deadline is set both from
// the handler (SetReadDeadline) and from the reading goroutine (the stall
// timeout), hence mu.
type body struct {
	r     io.Reader
	rc    *http.ResponseController // this request's
	stall time.Duration
	left  int64 // bytes the content-length still announces; -1: none

	mu     sync.Mutex
	closed bool      // the handler returned: reads fail
	userRD time.Time // the deadline the handler asked for
	rdl    time.Time // the stream's read deadline, as last set
}

var (
	errShort  = errors.New("request body shorter than its content-length")
	errClosed = errors.New("request body read after its handler returned")
)

func (b *body) Read(p []byte) (int, error) {
	if err := b.arm(); err != nil {
		return 0, err
	}
	if b.left <= 0 || int64(len(p)) < b.left {
		n, err := b.r.Read(p)
		if b.left > 0 {
			b.left -= int64(n)
		}
		return n, err
	}
	want := int(b.left)
	n := 0
	for n < want {
		m, err := b.r.Read(p[n:want])
		n += m
		if m > 0 {
			if aerr := b.arm(); aerr != nil {
				return n, aerr
			}
		}
		if err == io.EOF && n < want {
			return n, errShort
		}
		if err != nil {
			b.left -= int64(n)
			return n, err
		}
	}
	b.left -= int64(n)
	return n, nil
}

// arm fails once the body is closed, and pushes the stream's read
// deadline back, never past the one the handler set.
func (b *body) arm() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed
	}
	if b.stall <= 0 {
		return nil
	}
	return b.armLocked(false)
}

func (b *body) armLocked(force bool) error {
	d := time.Now().Add(b.stall)
	if !b.userRD.IsZero() && b.userRD.Before(d) {
		d = b.userRD
	} else if !force && d.Sub(b.rdl) <= b.stall/8 {
		return nil
	}
	if d.Equal(b.rdl) {
		return nil
	}
	b.rdl = d
	return b.rc.SetReadDeadline(d)
}

// setReadDeadline is the handler's SetReadDeadline: t bounds the reads
// (the zero time removes the bound, the stall timeout still applies).
func (b *body) setReadDeadline(t time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.userRD = t
	if b.stall > 0 {
		return b.armLocked(true)
	}
	return b.rc.SetReadDeadline(t)
}

// close fails every later read.
func (b *body) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}
