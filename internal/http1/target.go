package http1

// checkTarget checks a request-target (RFC 9112 §3.2) and returns the
// authority it names, if any. Only visible ASCII is allowed. The forms:
// origin-form ("/p?q"), asterisk-form ("*", OPTIONS only), authority-form
// ("host:port", CONNECT only) and absolute-form ("scheme://authority/p").
// As in net/http, a '%' in the path must start a %XX escape.
func checkTarget(t, method []byte) (auth []byte, ok bool) {
	if len(t) == 0 {
		return nil, false
	}
	for _, c := range t {
		if !targetTab[c] {
			return nil, false
		}
	}
	switch {
	case t[0] == '/':
		return nil, validPath(t)
	case string(t) == "*":
		return nil, string(method) == "OPTIONS"
	case string(method) == "CONNECT":
		return t, ValidAuthority(str(t))
	}
	i := schemeLen(t)
	if i == 0 || len(t) < i+3 || string(t[i:i+3]) != "://" {
		return nil, false
	}
	rest := t[i+3:]
	end := len(rest)
	for j, c := range rest {
		if c == '/' || c == '?' {
			end = j
			break
		}
	}
	auth = rest[:end]
	return auth, ValidAuthority(str(auth)) && validPath(rest[end:])
}

// schemeLen returns the length of the scheme at the start of t (RFC 3986
// §3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )), or 0.
func schemeLen(t []byte) int {
	for i, c := range t {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && (isDigit(c) || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return i
		default:
			return 0
		}
	}
	return 0
}

// validPath checks the percent-encoding of the path part (before '?').
func validPath(p []byte) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '?':
			return true
		case '%':
			if i+2 >= len(p) {
				return false
			}
			_, ok1 := unhex(p[i+1])
			_, ok2 := unhex(p[i+2])
			if !ok1 || !ok2 {
				return false
			}
		}
	}
	return true
}
