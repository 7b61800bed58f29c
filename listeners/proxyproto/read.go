package proxyproto

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/edgeway/edgeway/internal/peek"
)

// smallBytes is the pooled buffer's size: any v1 header, and a v2 header
// with IPv6 addresses and 200 bytes of TLVs.
const smallBytes = 256

var smallBufs = sync.Pool{New: func() any { return new([smallBytes]byte) }}

// Read reads the PROXY protocol header at the start of the connection
// behind rc (from (*net.TCPConn).SyscallConn or engine.Conn.Raw) and takes
// exactly its bytes off the socket: the next read returns the first byte
// after it. It peeks until the header is complete; on an error it has
// consumed nothing.
//
// max bounds the header's length in bytes (0 or less means
// DefaultMaxBytes); a longer one fails with ErrTooLong as soon as its
// length is known. The connection's read deadline bounds the wait (the
// caller sets it; errors.Is(err, os.ErrDeadlineExceeded) then holds). A
// peer that closes or resets first gets io.EOF, io.ErrUnexpectedEOF or
// the socket error; Parse's errors come back as they are.
func Read(rc syscall.RawConn, max int) (Header, error) {
	return read(rc, max, nil)
}

// read is Read; seen, when not nil, is called with every prefix peeked
// (tests use it to send the rest once the peek has waited).
func read(rc syscall.RawConn, max int, seen func([]byte)) (Header, error) {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	small := smallBufs.Get().(*[smallBytes]byte)
	// Lifetime: the Header returned holds addresses (values), nothing
	// that views the buffer.
	defer smallBufs.Put(small)
	buf, pooled := small[:min(max, smallBytes)], true
	h, n, err := peekHeader(rc, buf, seen)
	if errors.Is(err, peek.ErrFull) {
		if n > max || len(buf) == max {
			return Header{}, fmt.Errorf("%w: more than %d bytes", ErrTooLong, max)
		}
		buf, pooled = make([]byte, n), false // a v2 header, its length known
		h, n, err = peekHeader(rc, buf, seen)
	}
	if err != nil {
		return Header{}, err
	}
	if h.TLVs != nil && pooled {
		// The TLVs alias the pooled buffer: read the header into its own
		// and parse that (the same bytes again, so no error this time).
		buf = make([]byte, n)
		if err := peek.Consume(rc, buf); err != nil {
			return Header{}, fmt.Errorf("proxyproto: reading header: %w", err)
		}
		h, _, err = Parse(buf)
		return h, err
	}
	if err := peek.Consume(rc, buf[:n]); err != nil {
		return Header{}, fmt.Errorf("proxyproto: reading header: %w", err)
	}
	return h, nil
}

// peekHeader peeks into buf until it holds a whole header, and parses it.
// With peek.ErrFull, the int is the length needed.
func peekHeader(rc syscall.RawConn, buf []byte, seen func([]byte)) (Header, int, error) {
	h, n, err := peek.Parse(rc, buf, Parse, ErrIncomplete, seen)
	switch {
	case err == nil:
		return h, n, nil
	case errors.Is(err, peek.ErrFull):
		return Header{}, n, err
	case errors.Is(err, ErrNotProxy), errors.Is(err, ErrTooLong), errors.Is(err, ErrMalformed):
		return Header{}, 0, err // Parse's own
	}
	return Header{}, 0, fmt.Errorf("proxyproto: reading header: %w", err)
}
