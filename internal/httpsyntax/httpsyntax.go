// Package httpsyntax holds the lexical rules of HTTP fields that several
// parts of edgeway check (RFC 9110 §5.1, §5.5, §5.6): tokens, field values
// and comma-separated token lists. One copy, so the config loader, the
// router and the upstream client agree on what a valid header is. It is
// written out rather than imported from httpguts, which pulls in IDNA
// tables.
package httpsyntax

import (
	"strings"

	"github.com/edgeway/edgeway/internal/httpmsg"
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

// ListHas reports whether the comma-separated list v holds tok, compared
// case-insensitively (Connection, Upgrade), without allocating.
func ListHas(v, tok string) bool {
	for len(v) > 0 {
		item := v
		if i := strings.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = ""
		}
		if httpmsg.EqualFold(strings.Trim(item, " \t"), tok) {
			return true
		}
	}
	return false
}

// StripH2C removes an HTTP/2 cleartext upgrade offer (RFC 7540 §3.2,
// dropped by RFC 9113 §3.1) from h: the Upgrade and HTTP2-Settings fields
// and their Connection options. offered says the caller already knows of
// one (the HTTP/1 parser reports it, and removes the two fields itself);
// otherwise h is searched for it. A request without one is returned as it
// is, with no allocation.
func StripH2C(h httpmsg.Header, offered bool) httpmsg.Header {
	for i := 0; !offered && i < len(h); i++ {
		offered = httpmsg.EqualFold(h[i].Name, "Upgrade") && ListHas(h[i].Value, "h2c")
	}
	if !offered {
		return h
	}
	h = h.Del("Upgrade").Del("HTTP2-Settings")
	var keep []string
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Connection") {
			continue
		}
		for opt := range strings.SplitSeq(f.Value, ",") {
			opt = strings.TrimSpace(opt)
			if opt != "" && !strings.EqualFold(opt, "upgrade") && !strings.EqualFold(opt, "http2-settings") {
				keep = append(keep, opt)
			}
		}
	}
	h = h.Del("Connection")
	if len(keep) > 0 {
		h = append(h, httpmsg.Field{Name: "Connection", Value: strings.Join(keep, ", ")})
	}
	return h
}

// TrimOWS removes optional whitespace (spaces and tabs, RFC 9110 §5.6.3)
// from both ends of s.
func TrimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
