package sniff

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/edgeway/edgeway/internal/peek"
)

// Peek waits until the whole ClientHello has arrived on the connection
// behind rc (from (*net.TCPConn).SyscallConn or engine.Conn.Raw) and
// parses it, without consuming anything: the next read of the connection
// starts at the hello, for crypto/tls or for a passthrough. On success
// buf[:n] holds the hello's records as sent.
//
// The connection's read deadline bounds the wait (the caller sets it;
// errors.Is(err, os.ErrDeadlineExceeded) then holds). buf bounds the
// size: a hello that does not fit fails with ErrTooLarge, so a buffer of
// MaxHelloBytes holds every hello Parse accepts. A peer that closes or
// resets the connection first gets io.EOF, io.ErrUnexpectedEOF or the
// socket error; Parse's errors come back as they are.
func Peek(rc syscall.RawConn, buf []byte) (Hello, int, error) {
	return peekHello(rc, buf, nil)
}

// peekHello is Peek; seen, when not nil, is called with every prefix
// peeked (tests use it to send the rest once the peek has waited).
func peekHello(rc syscall.RawConn, buf []byte, seen func([]byte)) (Hello, int, error) {
	h, n, err := peek.Parse(rc, buf, Parse, ErrIncomplete, seen)
	switch {
	case err == nil:
		return h, n, nil
	case errors.Is(err, peek.ErrFull):
		return Hello{}, 0, fmt.Errorf("%w: it needs more than the %d-byte buffer", ErrTooLarge, len(buf))
	case errors.Is(err, ErrNotTLS), errors.Is(err, ErrTooLarge), errors.Is(err, ErrMalformed):
		return Hello{}, 0, err // Parse's own
	}
	return Hello{}, 0, fmt.Errorf("sniff: reading ClientHello: %w", err)
}
