// Package peek reads the first bytes a client sent without taking them off
// the socket: recv(2) with MSG_PEEK, driven through syscall.RawConn so
// that Go's poller does the waiting and the connection's read deadline
// bounds it. The TLS ClientHello sniffer and the PROXY protocol reader use
// it to look at a header before deciding who reads the stream. Its
// tradeoff: every wake-up peeks the whole prefix again (a few hundred bytes
// to a few KiB, once per connection) instead of keeping a buffer that
// would then have to be handed on.
//
// Linux only; elsewhere Peek and Consume return errors.ErrUnsupported.
package peek

import (
	"errors"
	"syscall"
)

// ErrFull is returned by Peek when the bytes the caller needs do not fit
// in its buffer: the buffer is full, or the caller asked for more than it
// holds.
var ErrFull = errors.New("peek: buffer full before the data was complete")

// Complete is what Peek asks after each peek. b holds every byte the
// client has sent so far, up to the buffer's length (from the start of the
// stream each time: the same bytes come again, with more after them, on
// the next call). It returns want, the number of bytes it needs: want <=
// len(b) ends the peek with (want, nil); want > len(b) waits for more (the
// total needed when known, else any lower bound such as len(b)+1). A
// non-nil error ends the peek with that error.
type Complete func(b []byte) (want int, err error)

// Parse peeks until parse, run on the bytes so far, returns anything but
// incomplete (whose int is then the length it needs), and returns parse's
// value and length. seen, when not nil, is called with every prefix
// peeked (tests use it to send the rest once the peek has waited). A
// buffer that fills first gives ErrFull, with the length needed.
func Parse[T any](rc syscall.RawConn, buf []byte, parse func([]byte) (T, int, error), incomplete error, seen func([]byte)) (T, int, error) {
	var v T
	n, err := Peek(rc, buf, func(b []byte) (int, error) {
		if seen != nil {
			seen(b)
		}
		var n int
		var err error
		v, n, err = parse(b)
		if err == incomplete {
			return n, nil
		}
		return n, err
	})
	return v, n, err
}
