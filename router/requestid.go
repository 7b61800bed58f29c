package router

import (
	"math/rand/v2"
	"strings"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Request IDs: every request carries one, in X-Request-Id, to the
// upstream and back to the client, and in its access-log line, so that
// the line can be found in the upstream's own logs. An ID from a trusted
// proxy (the listener's trusted_proxies) is kept when it is 1 to
// maxRequestID visible ASCII bytes; any other is replaced (a client
// could otherwise write into the logs what it likes).

const (
	requestIDHeader = "X-Request-Id"
	maxRequestID    = 128
)

// requestID sets x.reqID: the trusted incoming one, else a new one. It
// is a heap string, never a view of a pooled buffer: an HTTP/2 server
// writes the response head after the handler has returned.
func (x *exchange) requestID() {
	if x.trusted {
		if v := x.in.Header.Get(requestIDHeader); validRequestID(v) {
			x.reqID = strings.Clone(v)
			return
		}
	}
	x.reqID = newRequestID()
}

// validRequestID reports whether v may be kept as a request ID.
func validRequestID(v string) bool {
	if v == "" || len(v) > maxRequestID {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// newRequestID is 32 random hex digits (128 bits, as a W3C trace-id), from
// the runtime's per-thread generator: no lock, one allocation.
func newRequestID() string {
	const hex = "0123456789abcdef"
	var b [32]byte
	for i, u := range [2]uint64{rand.Uint64(), rand.Uint64()} {
		for j := range 16 {
			b[i*16+j] = hex[(u>>(60-4*j))&0xf]
		}
	}
	return string(b[:])
}

// withRequestID is h and the X-Request-Id field, in dst (the exchange's
// buffer): h itself may be shared (a static redirect head) and must not
// be appended to.
func withRequestID(dst, h httpmsg.Header, id string) httpmsg.Header {
	dst = append(dst[:0], h...)
	return append(dst, httpmsg.Field{Name: requestIDHeader, Value: id})
}
