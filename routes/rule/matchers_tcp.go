package rule

import (
	"slices"
	"strings"

	"github.com/edgeway/edgeway/internal/alpn"
)

// The TCP matchers of §6.

func buildHostSNI(_ *parser, a []arg) (tcpFn, *Error) {
	h := a[0].val
	if h == "*" { // the catch-all: matches non-TLS connections too
		return func(*TCPHello) bool { return true }, nil
	}
	if !validSNIPattern(h) {
		return nil, &Error{Offset: a[0].off, Msg: "HostSNI value " + quote(h) +
			" is not a valid hostname or IP: expected letters, digits, '_', '.', '-', ':' with an optional leading '*.'"}
	}
	trimmed := strings.TrimSuffix(h, ".")
	return func(c *TCPHello) bool {
		if c.SNI == "" {
			return false
		}
		return c.SNI == h || domainMatches(c.SNI, trimmed)
	}, nil
}

// validSNIPattern checks h against ^(\*\.)?[[:word:].\-:]+$.
func validSNIPattern(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		word := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
		if !word && c != '.' && c != '-' && c != ':' {
			return false
		}
	}
	return true
}

func buildHostSNIRegexp(p *parser, a []arg) (tcpFn, *Error) {
	if !isASCII(a[0].val) {
		return nil, &Error{Offset: a[0].off, Msg: "HostSNIRegexp value " + quote(a[0].val) + " has non-ASCII characters; use punycode (xn--...)"}
	}
	re, err := p.compileRE("HostSNIRegexp", a[0])
	if err != nil {
		return nil, err
	}
	return func(c *TCPHello) bool { return re.match(c.SNI) }, nil
}

// buildALPN refuses alpn.ACME, the TLS-ALPN-01 protocol (RFC 8737): those
// connections belong to the ACME responder, never to a route.
func buildALPN(_ *parser, a []arg) (tcpFn, *Error) {
	p := a[0].val
	if p == alpn.ACME {
		return nil, &Error{Offset: a[0].off, Msg: `ALPN value "` + alpn.ACME + `" is reserved for ACME TLS-ALPN-01 challenges`}
	}
	return func(c *TCPHello) bool { return slices.Contains(c.ALPN, p) }, nil
}

func buildClientIPTCP(_ *parser, a []arg) (tcpFn, *Error) {
	pfx, err := parseClientIP(a[0])
	if err != nil {
		return nil, err
	}
	return func(c *TCPHello) bool { return clientIPIn(pfx, c.ClientIP) }, nil
}
