package proxyproto

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"unsafe"
)

// Limits.
const (
	// MaxV1Bytes is the longest v1 header, CRLF included (spec §2.1).
	MaxV1Bytes = 107
	// DefaultMaxBytes is Read's bound on a header when its caller gives
	// none: room for a v2 header with addresses and about 4 KiB of TLVs.
	DefaultMaxBytes = 4096
	// MaxTLVs bounds the TLVs of a v2 header, NOOP padding not counted.
	MaxTLVs = 64
)

var (
	// ErrIncomplete means the bytes end before the header does; Parse
	// returns it with the number of bytes needed (exact for v2 once its
	// 16-byte fixed part is there, else a lower bound).
	ErrIncomplete = errors.New("proxyproto: incomplete header")
	// ErrNotProxy means the first bytes are neither "PROXY" (v1) nor the
	// v2 signature: the peer sent no PROXY header.
	ErrNotProxy = errors.New("proxyproto: no PROXY protocol header")
	// ErrTooLong means the header is longer than allowed: a v1 line with
	// no CRLF within MaxV1Bytes, or (Read) a header over its max.
	ErrTooLong = errors.New("proxyproto: header too long")
	// ErrMalformed is matched (with errors.Is) by every error that reports
	// a header which breaks the specification; the error says how.
	ErrMalformed = errors.New("proxyproto: malformed header")
)

// malformedError describes a broken header; it matches ErrMalformed.
type malformedError struct{ msg string }

func (e *malformedError) Error() string        { return "proxyproto: malformed header: " + e.msg }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(format string, args ...any) error {
	return &malformedError{msg: fmt.Sprintf(format, args...)}
}

// Header is a parsed PROXY protocol header.
type Header struct {
	// Version is 1 or 2.
	Version int
	// Local is true when the header carries no client address to use:
	// v2 LOCAL (a health check from the proxy itself), v1 UNKNOWN, or a
	// v2 PROXY header of family UNSPEC or UNIX. The connection's own peer
	// address is then the one to use, and Source and Dest are zero.
	Local bool
	// Source is the client's address and Dest the address it connected
	// to, as the proxy saw them. IPv4-mapped IPv6 addresses in a v1 TCP6
	// or v2 INET6 header stay as sent (netip.Addr.Unmap undoes them).
	Source, Dest netip.AddrPort
	// TLVs holds a v2 header's type-length-value fields in order, NOOP
	// padding left out; nil for v1. From Parse their values alias its
	// input; from Read they are the header's own.
	TLVs []TLV
}

var (
	sigV1 = []byte("PROXY")
	sigV2 = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

// Parse parses the PROXY protocol header at the start of b and returns it
// with its length: b[n:] is the client's stream. With ErrIncomplete, n is
// the number of bytes needed; with any other error it is 0. Parse never
// panics and allocates nothing but the TLV slice (and error messages).
func Parse(b []byte) (Header, int, error) {
	switch {
	case bytes.HasPrefix(b, sigV2):
		return parseV2(b)
	case bytes.HasPrefix(b, sigV1):
		return parseV1(b)
	case len(b) < len(sigV2) && bytes.HasPrefix(sigV2, b), len(b) < len(sigV1) && bytes.HasPrefix(sigV1, b):
		return Header{}, len(b) + 1, ErrIncomplete
	}
	return Header{}, 0, ErrNotProxy
}

// parseV1 parses a v1 line: "PROXY" SP (TCP4|TCP6) SP src SP dst SP
// sport SP dport CRLF, or "PROXY UNKNOWN" and anything up to CRLF.
func parseV1(b []byte) (Header, int, error) {
	if len(b) > len(sigV1) && b[len(sigV1)] != ' ' {
		return Header{}, 0, malformed("no space after PROXY")
	}
	lf := bytes.IndexByte(b[:min(len(b), MaxV1Bytes)], '\n')
	switch {
	case lf < 0 && len(b) >= MaxV1Bytes:
		return Header{}, 0, ErrTooLong
	case lf < 0:
		return Header{}, len(b) + 1, ErrIncomplete
	case b[lf-1] != '\r':
		return Header{}, 0, malformed("v1 line ends without CRLF")
	}
	h, err := parseV1Fields(b[len(sigV1)+1 : lf-1])
	if err != nil {
		return Header{}, 0, err
	}
	return h, lf + 1, nil
}

// parseV1Fields parses what follows "PROXY ", CRLF excluded.
func parseV1Fields(line []byte) (Header, error) {
	proto, rest, _ := bytes.Cut(line, []byte{' '})
	h := Header{Version: 1}
	switch string(proto) {
	case "UNKNOWN":
		h.Local = true // the rest is to be ignored (spec §2.1)
		return h, nil
	case "TCP4", "TCP6":
	default:
		return Header{}, malformed("v1 protocol %q", proto)
	}
	var f [4][]byte
	for i := range f {
		var ok bool
		f[i], rest, ok = bytes.Cut(rest, []byte{' '})
		if ok == (i == len(f)-1) {
			return Header{}, malformed("v1 line needs 6 fields separated by single spaces")
		}
	}
	v4 := proto[3] == '4'
	src, err1 := v1Addr(f[0], v4)
	dst, err2 := v1Addr(f[1], v4)
	sport, err3 := v1Port(f[2])
	dport, err4 := v1Port(f[3])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return Header{}, err
	}
	h.Source, h.Dest = netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)
	return h, nil
}

// v1Addr parses an address field: dotted quad for TCP4, RFC 4291 text
// (no zone) for TCP6.
func v1Addr(f []byte, v4 bool) (netip.Addr, error) {
	if len(f) == 0 || bytes.IndexByte(f, '%') >= 0 {
		return netip.Addr{}, malformed("v1 address %q", f)
	}
	// The string does not outlive the call: ParseAddr keeps no reference
	// to it in an Addr without zone, and its error is dropped.
	a, err := netip.ParseAddr(unsafe.String(&f[0], len(f)))
	if err != nil || a.Is4() != v4 {
		return netip.Addr{}, malformed("v1 address %q", f)
	}
	return a, nil
}

// v1Port parses a port field: 1 to 5 decimal digits, at most 65535.
func v1Port(f []byte) (uint16, error) {
	if len(f) == 0 || len(f) > 5 {
		return 0, malformed("v1 port %q", f)
	}
	p := 0
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, malformed("v1 port %q", f)
		}
		p = p*10 + int(c-'0')
	}
	if p > 65535 {
		return 0, malformed("v1 port %q", f)
	}
	return uint16(p), nil
}
