package upstream

// Lexical checks of what goes into a request head (RFC 9110 §5.1, §5.5,
// §7.2), written here rather than imported from httpguts, which would pull
// in IDNA tables.

// isToken reports whether b may appear in a token (a method or a field
// name).
func isToken(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func validToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isToken(s[i]) {
			return false
		}
	}
	return s != ""
}

// validFieldValue rejects control characters other than tab, so that a
// value cannot end its line.
func validFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// validHost accepts a reg-name, an IPv4 or bracketed IPv6 address, with an
// optional port, percent-encoding included.
func validHost(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if isToken(b) && b != '#' && b != '^' && b != '`' && b != '|' {
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
