package upstream

import "github.com/edgeway/edgeway/internal/httpsyntax"

// Lexical checks of what goes into a request head beyond tokens and field
// values (internal/httpsyntax): Host (RFC 9110 §7.2) and the target.

// validHost accepts a reg-name, an IPv4 or bracketed IPv6 address, with an
// optional port, percent-encoding included.
func validHost(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if httpsyntax.IsTokenChar(b) && b != '#' && b != '^' && b != '`' && b != '|' {
			continue
		}
		switch b {
		case ':', '[', ']', '(', ')', ',', ';', '=':
			continue
		}
		return false
	}
	return true
}

// validTarget rejects what would break the request line: controls,
// spaces and non-ASCII bytes.
func validTarget(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
