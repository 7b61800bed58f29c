package rule

import (
	"net"
	"path"
	"strings"
)

// The request side of §3: what listeners put in HTTPRequest. Each function
// returns its input unchanged, without allocating, when there is nothing to
// change, which is the common case.

// CanonicalHost turns a request authority into the host that Host and
// HostRegexp read (§3.2): the port is stripped ("[v6]" loses its brackets,
// a bare "fe80::1" stays as is, an unsplittable value is kept), then
// surrounding white space is trimmed and the result lower-cased.
func CanonicalHost(authority string) string {
	h := authority
	if strings.IndexByte(h, ':') >= 0 {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		} else if len(h) >= 2 && h[0] == '[' && h[len(h)-1] == ']' {
			h = h[1 : len(h)-1]
		}
	}
	return strings.ToLower(strings.TrimSpace(h))
}

// NormalizePath applies entry-point normalisation (§3.1 steps 1-3) to an
// escaped request path and returns the sanitised escaped path (forwarded
// upstream) and the routing path (§3.3). ok is false when the request must
// be answered 400: a '#', or a '%' not followed by two hex digits.
func NormalizePath(escaped string) (clean, routing string, ok bool) {
	if strings.IndexByte(escaped, '#') >= 0 {
		return "", "", false
	}
	norm, ok := normalizeEscapes(escaped)
	if !ok {
		return "", "", false
	}
	clean = sanitizePath(norm)
	return clean, RoutingPath(clean), true
}

// normalizeEscapes decodes %XX of unreserved characters and upper-cases
// the hex digits of every other escape (§3.1 step 2).
func normalizeEscapes(s string) (string, bool) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, true
	}
	var b []byte
	for ; i < len(s); i++ {
		if s[i] != '%' {
			if b != nil {
				b = append(b, s[i])
			}
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		c := unhex(s[i+1])<<4 | unhex(s[i+2])
		switch {
		case isUnreserved(c):
			b = lazyAppend(b, s, i, c)
		case isUpperHex(s[i+1]) && isUpperHex(s[i+2]):
			if b != nil {
				b = append(b, s[i:i+3]...)
			}
		default:
			b = append(lazyAppend(b, s, i, '%'), upperHex[c>>4], upperHex[c&15])
		}
		i += 2
	}
	if b == nil {
		return s, true
	}
	return string(b), true
}

// lazyAppend appends c to b, first copying s[:i] when b is not yet in use.
func lazyAppend(b []byte, s string, i int, c byte) []byte {
	if b == nil {
		b = make([]byte, i, len(s))
		copy(b, s[:i])
	}
	return append(b, c)
}

const upperHex = "0123456789ABCDEF"

func isUpperHex(c byte) bool { return '0' <= c && c <= '9' || 'A' <= c && c <= 'F' }

func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// sanitizePath removes dot-segments and repeated slashes and keeps a
// trailing slash (§3.1 step 3), as Go's url.URL.JoinPath() does for
// Traefik. "%2F" is no separator and ".." only a literal one.
func sanitizePath(p string) string {
	if p == "" {
		return ""
	}
	if p[0] != '/' { // a relative path (such as "*") stays relative
		c := path.Clean("/" + p)[1:]
		if p[len(p)-1] == '/' && !strings.HasSuffix(c, "/") {
			c += "/"
		}
		return c
	}
	c := path.Clean(p)
	if p[len(p)-1] != '/' || strings.HasSuffix(c, "/") {
		return c
	}
	if len(c) < len(p) && p[:len(c)] == c && p[len(c)] == '/' {
		return p[:len(c)+1] // no allocation for "/a/b/"
	}
	return c + "/"
}

// RoutingPath computes the routing path (§3.3) of an escaped path without
// sanitising it (for listeners with normalisation off): every %XX is
// decoded except those of the RFC 3986 reserved characters and '%', which
// stay encoded with upper-case hex digits. A '%' without two hex digits
// after it is kept as it is.
func RoutingPath(escaped string) string {
	i := strings.IndexByte(escaped, '%')
	if i < 0 {
		return escaped
	}
	var b []byte
	for ; i < len(escaped); i++ {
		c := escaped[i]
		if c != '%' || i+2 >= len(escaped) || !isHex(escaped[i+1]) || !isHex(escaped[i+2]) {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		d := unhex(escaped[i+1])<<4 | unhex(escaped[i+2])
		switch {
		case !isReserved(d):
			b = lazyAppend(b, escaped, i, d)
		case isUpperHex(escaped[i+1]) && isUpperHex(escaped[i+2]):
			if b != nil {
				b = append(b, escaped[i:i+3]...)
			}
		default:
			b = append(lazyAppend(b, escaped, i, '%'), upperHex[d>>4], upperHex[d&15])
		}
		i += 2
	}
	if b == nil {
		return escaped
	}
	return string(b)
}

// isReserved reports whether c is an RFC 3986 reserved character or '%'.
func isReserved(c byte) bool {
	return strings.IndexByte(":/?#[]@!$&'()*+,;=%", c) >= 0
}

// NormalizeQuery applies §3.1 step 4 to a raw query: each ';' becomes '&'
// (Go's http.AllowQuerySemicolons).
func NormalizeQuery(raw string) string { return strings.ReplaceAll(raw, ";", "&") }
