package upstream

import (
	"errors"
	"net"
)

// Kind says which step of an upstream round trip failed.
type Kind uint8

// The kinds of *Error.
const (
	// KindConnect: dialing the server failed (refused, unreachable, timeout).
	KindConnect Kind = iota + 1
	// KindWrite: sending the request failed.
	KindWrite
	// KindRead: the connection failed or closed before a complete response
	// head arrived, or the response-header timeout passed.
	KindRead
	// KindProtocol: the server's answer is not a valid HTTP/1.1 response
	// (bad status line or headers, headers too large).
	KindProtocol
	// KindRequest: the request cannot be sent (invalid header or method).
	KindRequest
)

var kindNames = [...]string{"", "connect", "write", "read", "bad response", "bad request"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Error is a failed upstream round trip. The router answers 504 when
// Timeout reports true and 502 otherwise.
type Error struct {
	Kind Kind
	Addr string // server address
	Err  error  // the underlying cause
}

func (e *Error) Error() string {
	return "upstream " + e.Addr + ": " + e.Kind.String() + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the round trip failed because a connect or
// response-header timeout passed.
func (e *Error) Timeout() bool {
	var ne net.Error
	return errors.As(e.Err, &ne) && ne.Timeout()
}

var (
	errHeaderTooLarge = errors.New("response headers exceed 1 MiB")
	errBodyClosed     = errors.New("response body read after Close")
	errTooMany1xx     = errors.New("too many 1xx responses")
	errBodyShort      = errors.New("request body shorter than its Content-Length")
	errBadURI         = errors.New("invalid request target")
	errBadSwitch      = errors.New("101 Switching Protocols to an upgrade the request did not offer")
)
