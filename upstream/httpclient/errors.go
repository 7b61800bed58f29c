package httpclient

import (
	"errors"
	"fmt"
	"net"
	"os"
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
	// KindRequest: the request cannot be sent (RoundTrip: a URL that is
	// not http://). Do reports a request it cannot send as *RequestError.
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

// IsConnectError reports whether err from a round trip means that no
// connection to the server could be opened (upstream.Result's
// ConnectFailed).
func IsConnectError(err error) bool {
	var ue *Error
	return errors.As(err, &ue) && ue.Kind == KindConnect
}

// RequestError is a request that Do refuses to send as it stands: no
// byte of it reached a server, and the server is not at fault, so it must
// not count against one (no outlier ejection, breaker or retry). Status
// is the answer the client should get:
//
//   - 400 when the request itself is not valid HTTP: a header name that
//     is not a token, a value with CR, LF, NUL or another control
//     character, an invalid method, target or Host. These are written to
//     no server, whatever the front end let through (defense in depth
//     against request smuggling and header injection).
//   - 502 when the request is valid but the upstream's protocol cannot
//     carry it: an Upgrade (WebSocket, ...) or CONNECT to an h2c upstream
//     (HTTP/2 has no 101; RFC 9113 §8.6).
type RequestError struct {
	Status int
	Addr   string // server address
	Err    error
}

func (e *RequestError) Error() string {
	return "upstream " + e.Addr + ": request not sent: " + e.Err.Error()
}

func (e *RequestError) Unwrap() error { return e.Err }

var (
	errHeaderTooLarge = errors.New("response headers exceed 1 MiB")
	errBodyClosed     = errors.New("response body read after Close")
	errTooMany1xx     = errors.New("too many 1xx responses")
	errBodyShort      = errors.New("request body shorter than its Content-Length")
	errBadURI         = errors.New("invalid request target")
	errBadSwitch      = errors.New("101 Switching Protocols to an upgrade the request did not offer")
	errH2Upgrade      = errors.New("an upgrade cannot be sent to an h2c upstream (HTTP/2 has no 101)")
	errH2Connect      = errors.New("CONNECT cannot be sent to an h2c upstream")
	errBadHeader      = errors.New("invalid header field")
	errBadHost        = errors.New("invalid Host")
	errRespTimeout    = fmt.Errorf("no response header within the response timeout: %w", os.ErrDeadlineExceeded)
)
