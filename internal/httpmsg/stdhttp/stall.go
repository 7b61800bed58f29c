package stdhttp

import (
	"errors"
	"io"
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

// armRead pushes the stream's read deadline back, never past the one the
// handler set.
func (w *writer) armRead() error {
	now := time.Now()
	d := now.Add(w.stall)
	if !w.userRD.IsZero() && w.userRD.Before(d) {
		d = w.userRD
	} else if d.Sub(w.rdl) <= w.stall/8 {
		return nil
	}
	if d.Equal(w.rdl) {
		return nil
	}
	w.rdl = d
	return w.rc.SetReadDeadline(d)
}

// body is an HTTP/2 request body as the handler reads it. With a
// content-length, a read that has room for all that is left reads until
// it has it, so a body that ends short (x/net fails the read at
// END_STREAM) fails the first read, before anything is forwarded, when
// it fits the first read.
type body struct {
	r    io.Reader
	w    *writer
	left int64 // bytes the content-length still announces; -1: none
}

var errShort = errors.New("request body shorter than its content-length")

func (b *body) Read(p []byte) (int, error) {
	if b.w.stall > 0 {
		if err := b.w.armRead(); err != nil {
			return 0, err
		}
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
		if m > 0 && b.w.stall > 0 {
			if aerr := b.w.armRead(); aerr != nil {
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
