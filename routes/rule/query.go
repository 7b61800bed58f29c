package rule

import "strings"

// maxQueryParams mirrors net/url's default limit: url.ParseQuery returns no
// values at all for a query with more parameters than this.
const maxQueryParams = 10000

// queryMatcher reads a raw query as url.ParseQuery does (§3.4) without
// building the map: it scans the pieces in place and decodes only while
// comparing, so a query without escapes costs no allocation.
type queryMatcher struct {
	key   string
	value string   // wanted value when re is nil ("" for Query(k))
	re    *matchRE // QueryRegexp(k, re)
}

func (q *queryMatcher) match(raw string) bool {
	if len(raw) >= maxQueryParams && strings.Count(raw, "&")+1 > maxQueryParams {
		return false
	}
	for raw != "" {
		var piece string
		piece, raw, _ = strings.Cut(raw, "&")
		if piece == "" || strings.IndexByte(piece, ';') >= 0 {
			continue // url.ParseQuery drops pieces holding a ';'
		}
		k, v, _ := strings.Cut(piece, "=")
		if !validEscapes(k) || !validEscapes(v) || !formEqual(k, q.key) {
			continue
		}
		if q.valueMatches(v) {
			return true
		}
	}
	return false
}

func (q *queryMatcher) valueMatches(escaped string) bool {
	if q.re == nil {
		return formEqual(escaped, q.value)
	}
	if strings.IndexByte(escaped, '%') < 0 && strings.IndexByte(escaped, '+') < 0 {
		return q.re.match(escaped)
	}
	return q.re.match(formDecode(escaped))
}

// validEscapes reports whether every '%' in s starts a two-hex-digit escape.
func validEscapes(s string) bool {
	for i := strings.IndexByte(s, '%'); i >= 0; {
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return false
		}
		next := strings.IndexByte(s[i+3:], '%')
		if next < 0 {
			break
		}
		i += 3 + next
	}
	return true
}

// formEqual reports whether the form-decoded esc ('+' is a space, %XX a
// byte) equals want. esc must have valid escapes.
func formEqual(esc, want string) bool {
	j := 0
	for i := 0; i < len(esc); i++ {
		c := esc[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			c = unhex(esc[i+1])<<4 | unhex(esc[i+2])
			i += 2
		}
		if j >= len(want) || want[j] != c {
			return false
		}
		j++
	}
	return j == len(want)
}

// formDecode decodes esc, which must have valid escapes.
func formDecode(esc string) string {
	b := make([]byte, 0, len(esc))
	for i := 0; i < len(esc); i++ {
		c := esc[i]
		switch c {
		case '+':
			c = ' '
		case '%':
			c = unhex(esc[i+1])<<4 | unhex(esc[i+2])
			i += 2
		}
		b = append(b, c)
	}
	return string(b)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}
