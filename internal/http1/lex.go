package http1

import (
	"net/netip"
	"strings"
	"unsafe"

	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// Byte classes of RFC 9110 §5.1, §5.5, §5.6.2 and RFC 3986 §3.2.2 as
// lookup tables, built once.
var (
	tokenTab  [256]bool // tchar
	valueTab  [256]bool // field-vchar, SP, HTAB (obs-text included)
	targetTab [256]bool // VCHAR: what a request-target may hold
	regTab    [256]bool // reg-name and port bytes, '%' excluded
	hostTab   [256]bool // what a Host field may hold (as Go's server)
)

func init() {
	for c := range 256 {
		b := byte(c)
		tokenTab[c] = httpsyntax.IsTokenChar(b)
		valueTab[c] = b == '\t' || (b >= ' ' && b != 0x7f)
		targetTab[c] = b > ' ' && b < 0x7f
		regTab[c] = isUnreserved(b) || isSubDelim(b)
		hostTab[c] = regTab[c] || b == '%' || b == ':' || b == '[' || b == ']'
	}
}

func isUnreserved(b byte) bool {
	return isAlnum(b) || b == '-' || b == '.' || b == '_' || b == '~'
}

func isSubDelim(b byte) bool {
	switch b {
	case '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=':
		return true
	}
	return false
}

func isAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || isDigit(b)
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// str returns b as a string sharing its bytes: b must not change while
// the string is in use.
//
// Lifetime: a parsed request's strings (method, target, host, fields)
// view the connection's read buffer, which the front end reuses for the
// next request once the handler returned (httpmsg's contract: a handler
// keeps none of them). The router uses them within the exchange; what
// outlives it is a copy (the HTTP/2 upstream client's head, stdhttp's
// header map, an upgrade's fields). A response head parsed by the
// upstream client views that connection's read buffer until its body is
// first read (httpclient.Response).
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// foldEq reports whether b equals the lower-case s under ASCII case
// folding.
func foldEq[T ~string | ~[]byte](b T, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// trimOWS removes leading and trailing SP and HTAB.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// nextListItem splits a comma-separated list (RFC 9110 §5.6.1): it
// returns the first item without OWS and the rest after its comma.
func nextListItem(v []byte) (item, rest []byte) {
	for i, c := range v {
		if c == ',' {
			return trimOWS(v[:i]), v[i+1:]
		}
	}
	return trimOWS(v), nil
}

// hasToken reports whether the list v holds the lower-case tok.
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var item []byte
		item, v = nextListItem(v)
		if foldEq(item, tok) {
			return true
		}
	}
	return false
}

// parseLength parses a Content-Length value: 1 to 19 digits, at most
// 2^63-1 (as strconv.ParseUint(v, 10, 63) in net/http).
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// validHost reports whether a Host field value holds only bytes that a
// uri-host and port may (net/http's httpguts.ValidHostHeader).
func validHost(v string) bool {
	for i := 0; i < len(v); i++ {
		if !hostTab[v[i]] {
			return false
		}
	}
	return true
}

// ValidAuthority checks an authority (a Host field, an HTTP/2
// :authority, or a request target's authority; RFC 9112
// §3.2.2, §3.2.3): a non-empty reg-name or IPv4 address, or an IPv6
// literal in brackets, then an optional ":" port. Userinfo and
// percent-encoding are refused: RFC 9110 §4.2.4 says to treat userinfo
// as an error, and a %-encoded host would be decoded differently by
// different recipients.
func ValidAuthority(a string) bool {
	host, port := a, ""
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 2 {
			return false
		}
		ip, err := netip.ParseAddr(a[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return false
		}
		host, port = "", a[end+1:]
		if port != "" && port[0] != ':' {
			return false
		}
	} else if i := strings.LastIndexByte(a, ':'); i >= 0 {
		host, port = a[:i], a[i:]
	}
	for i := 0; i < len(host); i++ {
		if !regTab[host[i]] {
			return false
		}
	}
	for i := 1; i < len(port); i++ {
		if !isDigit(port[i]) {
			return false
		}
	}
	return host != "" || strings.HasPrefix(a, "[")
}
