package http1

import "bytes"

// nextLine returns the line that starts at b[i], without its line end
// (LF or CRLF, RFC 9112 §2.2), and the index after it; ok is false when b
// holds no LF from i on.
func nextLine(b []byte, i int) (line []byte, next int, ok bool) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		return nil, i, false
	}
	line = b[i : i+j]
	if j > 0 && line[j-1] == '\r' {
		line = line[:j-1]
	}
	return line, i + j + 1, true
}

// parseField splits a field line (RFC 9112 §5) into its name, a token
// directly followed by the colon, and its value without surrounding
// whitespace, made of field-vchar, SP and HTAB only. A line that starts
// with whitespace is obs-fold, refused (§5.2).
func parseField(line []byte) (name, value []byte, r reason) {
	if c := line[0]; c == ' ' || c == '\t' {
		return nil, nil, rObsFold
	}
	i := 0
	for i < len(line) && tokenTab[line[i]] {
		i++
	}
	if i == len(line) {
		return nil, nil, rNoColon
	}
	switch c := line[i]; {
	case c == ':' && i > 0:
	case c == ' ' || c == '\t':
		return nil, nil, rSpaceInName
	case c == '\r':
		return nil, nil, rBareCR
	default:
		return nil, nil, rBadName
	}
	value = trimOWS(line[i+1:])
	if r := checkValue(value); r != rOK {
		return nil, nil, r
	}
	return line[:i], value, rOK
}

// checkValue refuses the control bytes other than HTAB in a field value
// (RFC 9110 §5.5): NUL, bare CR, LF can only be there by mistake or to
// make two parsers disagree on where the line ends.
func checkValue(v []byte) reason {
	for _, c := range v {
		if !valueTab[c] {
			if c == '\r' {
				return rBareCR
			}
			return rCtlByte
		}
	}
	return rOK
}

// fieldKind is a header field the parsers read the value of.
type fieldKind uint8

const (
	fOther fieldKind = iota
	fHost
	fContentLength
	fTransferEncoding
	fConnection
	fUpgrade
	fExpect
	fHTTP2Settings
)

// kindOf classifies a field name, case-insensitively.
func kindOf[T ~string | ~[]byte](name T) fieldKind {
	switch len(name) {
	case 4:
		if foldEq(name, "host") {
			return fHost
		}
	case 6:
		if foldEq(name, "expect") {
			return fExpect
		}
	case 7:
		if foldEq(name, "upgrade") {
			return fUpgrade
		}
	case 10:
		if foldEq(name, "connection") {
			return fConnection
		}
	case 14:
		if foldEq(name, "content-length") {
			return fContentLength
		}
		if foldEq(name, "http2-settings") {
			return fHTTP2Settings
		}
	case 17:
		if foldEq(name, "transfer-encoding") {
			return fTransferEncoding
		}
	}
	return fOther
}

// lengths collects the framing fields of one head (RFC 9112 §6).
type lengths struct {
	cl      int64
	clRaw   []byte
	clCount int
	clBad   bool // empty, not digits, too large, or differing values
	teCount int
	teBad   bool // not exactly "chunked"
	close   bool // Connection: close
	keep    bool // Connection: keep-alive
}

// add records a Content-Length, Transfer-Encoding or Connection field.
func (l *lengths) add(k fieldKind, v []byte) {
	switch k {
	case fContentLength:
		l.clCount++
		n, ok := parseLength(v)
		if !ok || (l.clCount > 1 && !bytes.Equal(v, l.clRaw)) {
			l.clBad = true
		}
		l.cl, l.clRaw = n, v
	case fTransferEncoding:
		l.teCount++
		l.teBad = l.teBad || !foldEq(v, "chunked")
	case fConnection:
		l.close = l.close || hasToken(v, "close")
		l.keep = l.keep || hasToken(v, "keep-alive")
	}
}

// keepAlive applies RFC 9112 §9.3: HTTP/1.1 persists unless "close";
// HTTP/1.0 only with "keep-alive".
func (l *lengths) keepAlive(http10 bool) bool {
	if http10 {
		return l.keep && !l.close
	}
	return !l.close
}

// parseVersion parses "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3).
func parseVersion(v []byte) (major, minor int, ok bool) {
	if len(v) != 8 || string(v[:5]) != "HTTP/" || !isDigit(v[5]) || v[6] != '.' || !isDigit(v[7]) {
		return 0, 0, false
	}
	return int(v[5] - '0'), int(v[7] - '0'), true
}
