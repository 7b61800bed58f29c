package tracing

import "github.com/edgeway/edgeway/internal/httpsyntax"

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the
// traceparent field names the trace a request belongs to and the span
// that sent it. Parsing and formatting work on fixed arrays: no
// allocation, so that a request that is not sampled costs nothing here.

// SpanContext is what a traceparent carries (§3.2.2): the trace, the
// span that sent the request (the parent-id field) and the flags.
type SpanContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
}

// FlagSampled is the sampled bit of the trace flags (§3.2.2.5).
const FlagSampled byte = 0x01

// Sampled reports whether the sampled flag is set.
func (c SpanContext) Sampled() bool { return c.Flags&FlagSampled != 0 }

// TraceparentLen is the length of a version 00 traceparent value.
const TraceparentLen = 55

// ParseTraceparent reads a traceparent value; ok is false for an invalid
// one, which the caller treats as absent and starts a new trace (§3.2.2:
// "the vendor MUST NOT parse tracestate" then). Invalid are: version ff,
// fields that are not lower-case hex of their length, an all-zero
// trace-id or parent-id, and a version 00 value of any other length than
// 55. A later version is read by the version 00 rules when it is at least
// 55 bytes and what follows them starts with '-' (§3.3, "Versioning of
// traceparent"). Spaces and tabs around the value (HTTP's OWS) are
// ignored.
func ParseTraceparent(v string) (c SpanContext, ok bool) {
	v = httpsyntax.TrimOWS(v)
	if len(v) < TraceparentLen || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return SpanContext{}, false
	}
	var ver [1]byte
	if !decodeHex(ver[:], v[0:2]) || ver[0] == 0xff {
		return SpanContext{}, false
	}
	if len(v) > TraceparentLen && (ver[0] == 0 || v[TraceparentLen] != '-') {
		return SpanContext{}, false
	}
	var flags [1]byte
	if !decodeHex(c.TraceID[:], v[3:35]) || !decodeHex(c.SpanID[:], v[36:52]) || !decodeHex(flags[:], v[53:55]) {
		return SpanContext{}, false
	}
	if isZero(c.TraceID[:]) || isZero(c.SpanID[:]) {
		return SpanContext{}, false
	}
	c.Flags = flags[0]
	return c, true
}

// AppendTraceparent appends c as a version 00 traceparent value.
func AppendTraceparent(b []byte, c SpanContext) []byte {
	b = append(b, "00-"...)
	b = appendHex(b, c.TraceID[:])
	b = append(b, '-')
	b = appendHex(b, c.SpanID[:])
	b = append(b, '-')
	return append(b, hexDigits[c.Flags>>4], hexDigits[c.Flags&0xf])
}

const hexDigits = "0123456789abcdef"

func appendHex(b, src []byte) []byte {
	for _, c := range src {
		b = append(b, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return b
}

// decodeHex fills dst from lower-case hex of exactly twice its length.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

// fromHex reads one lower-case hex digit: the specification's HEXDIGLC,
// so upper case is invalid.
func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
