// Package httpsyntax holds the lexical rules of HTTP fields that several
// parts of edgeway check (RFC 9110 §5.1, §5.5, §5.6): tokens, field values
// and comma-separated token lists. One copy, so the config loader, the
// router and the upstream client agree on what a valid header is. It is
// written out rather than imported from httpguts, which pulls in IDNA
// tables.
package httpsyntax

import (
	"net/http"
	"strings"
)

// IsTokenChar reports whether b is a tchar (RFC 9110 §5.6.2).
func IsTokenChar(b byte) bool {
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

// ValidToken reports whether s is a non-empty token: a method or a field
// name.
func ValidToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !IsTokenChar(s[i]) {
			return false
		}
	}
	return s != ""
}

// ValidFieldValue reports whether s can be sent as a field value: no
// control characters other than tab, so that it cannot end its line.
func ValidFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// HasToken reports whether the comma-separated lists in vals hold tok,
// compared case-insensitively (Connection, Upgrade).
func HasToken(vals []string, tok string) bool {
	for _, v := range vals {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), tok) {
				return true
			}
		}
	}
	return false
}

// StripH2CUpgrade removes an HTTP/2 cleartext upgrade offer (RFC 7540
// §3.2, dropped by RFC 9113 §3.1) from h: the Upgrade and HTTP2-Settings
// fields and their Connection options. It reports whether there was one.
func StripH2CUpgrade(h http.Header) bool {
	if !HasToken(h["Upgrade"], "h2c") {
		return false
	}
	h.Del("Upgrade")
	h.Del("Http2-Settings")
	var keep []string
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			if f != "" && !strings.EqualFold(f, "upgrade") && !strings.EqualFold(f, "http2-settings") {
				keep = append(keep, f)
			}
		}
	}
	h.Del("Connection")
	if len(keep) > 0 {
		h.Set("Connection", strings.Join(keep, ", "))
	}
	return true
}
