package stdhttp

import (
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// validH2 applies the rules x/net leaves to the application: a method
// that is a token, an authority that is host[:port] (as the HTTP/1 front
// end requires of Host), and one content-length of digits that agrees
// with the body (RFC 9113 §8.1.1: a request whose content-length does
// not match its DATA is malformed; RFC 9110 §8.6: a list or differing
// values are refused, not guessed at).
func validH2(r *http.Request) bool {
	if !httpsyntax.ValidToken(r.Method) || (r.Host != "" && !validAuthority(r.Host)) {
		return false
	}
	cl, ok := r.Header["Content-Length"]
	if !ok {
		return true
	}
	if len(cl) != 1 || !digits(cl[0]) {
		return false
	}
	// x/net parsed the value into ContentLength, or left it 0 when
	// HEADERS ended the stream: a body that cannot match is refused.
	n, err := strconv.ParseInt(cl[0], 10, 64)
	return err == nil && n == r.ContentLength
}

func digits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validAuthority checks host[:port]: a reg-name or IPv4 address of
// unreserved and sub-delim characters, or a bracketed IPv6 literal;
// userinfo and percent-encoding are refused (RFC 9110 §4.2.4, and a
// %-encoded host would be read differently by different recipients).
func validAuthority(a string) bool {
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
		if !regName(host[i]) {
			return false
		}
	}
	if port != "" && !digits(port[1:]) && port != ":" {
		return false
	}
	return host != "" || strings.HasPrefix(a, "[")
}

func regName(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=", c) >= 0
}
