package h1guard

func equalFoldChunked(v []byte) bool {
	const s = "chunked"
	if len(v) != len(s) {
		return false
	}
	for i := range v {
		if lower(v[i]) != s[i] {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func satInc(n uint8) uint8 {
	if n < 255 {
		n++
	}
	return n
}
