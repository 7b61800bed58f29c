package h2conn

import (
	"strconv"

	"golang.org/x/net/http2/hpack"
)

// Response header blocks are encoded without the HPACK dynamic table:
// every field is a literal without indexing (RFC 7541 §6.2.2), its name
// an index into the static table where it has one. The encoder then has
// no state, so a stream encodes its block on its own goroutine without
// the connection's lock, and no string of a response (which may view an
// upstream's pooled buffer) outlives it in a table. The cost is a few
// bytes a repeated field that the dynamic table would have saved.

// staticNames maps the static table's names (RFC 7541 Appendix A) to
// the index of their first entry.
var staticNames = func() map[string]uint64 {
	names := []string{":authority", ":method", ":method", ":path", ":path", ":scheme", ":scheme",
		":status", ":status", ":status", ":status", ":status", ":status", ":status",
		"accept-charset", "accept-encoding", "accept-language", "accept-ranges", "accept",
		"access-control-allow-origin", "age", "allow", "authorization", "cache-control",
		"content-disposition", "content-encoding", "content-language", "content-length",
		"content-location", "content-range", "content-type", "cookie", "date", "etag", "expect",
		"expires", "from", "host", "if-match", "if-modified-since", "if-none-match", "if-range",
		"if-unmodified-since", "last-modified", "link", "location", "max-forwards",
		"proxy-authenticate", "proxy-authorization", "range", "referer", "refresh", "retry-after",
		"server", "set-cookie", "strict-transport-security", "transfer-encoding", "user-agent",
		"vary", "via", "www-authenticate"}
	m := make(map[string]uint64, len(names))
	for i, n := range names {
		if _, ok := m[n]; !ok {
			m[n] = uint64(i + 1)
		}
	}
	return m
}()

// The static entries a response uses whole (RFC 7541 Appendix A).
const (
	staticStatus200     = 8
	staticStatusName    = 8
	staticContentLength = 28
)

// statusText holds the three digits of every status, made once.
var statusText = func() (t [1000]string) {
	for i := 100; i < 1000; i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

// appendInt appends an HPACK integer with an n-bit prefix whose high
// bits are first (RFC 7541 §5.1).
func appendInt(b []byte, first byte, n uint, v uint64) []byte {
	max := uint64(1)<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	v -= max
	for v >= 128 {
		b = append(b, byte(v&0x7f|0x80))
		v >>= 7
	}
	return append(b, byte(v))
}

// appendString appends an HPACK string literal, Huffman-coded when that
// is shorter.
func appendString(b []byte, s string) []byte {
	if n := hpack.HuffmanEncodeLength(s); n < uint64(len(s)) {
		b = appendInt(b, 0x80, 7, n)
		return hpack.AppendHuffmanString(b, s)
	}
	b = appendInt(b, 0, 7, uint64(len(s)))
	return append(b, s...)
}

// appendStatus appends :status.
func appendStatus(b []byte, status int) []byte {
	if status == 200 {
		return append(b, 0x80|staticStatus200)
	}
	b = appendInt(b, 0, 4, staticStatusName)
	return appendString(b, statusText[status])
}

// appendContentLength appends content-length: n.
func appendContentLength(b []byte, n int64) []byte {
	b = appendInt(b, 0, 4, staticContentLength)
	var d [20]byte
	v := strconv.AppendInt(d[:0], n, 10)
	b = appendInt(b, 0, 7, uint64(len(v)))
	return append(b, v...)
}

// appendField appends one field, its name lower-cased (HTTP/2 field
// names are lower case, RFC 9113 §8.2.1; an HTTP/1 upstream's are not).
// Fields that HTTP/2 must not carry are dropped.
func appendField(b []byte, name, value string) []byte {
	var lower [64]byte
	ln := lowerName(lower[:0], name)
	if dropped(ln) {
		return b
	}
	if i, ok := staticNames[string(ln)]; ok && len(ln) > 0 && ln[0] != ':' {
		b = appendInt(b, 0, 4, i)
	} else {
		b = append(b, 0)
		b = appendInt(b, 0, 7, uint64(len(ln)))
		b = append(b, ln...)
	}
	return appendString(b, value)
}

// lowerName appends name in lower case to dst (on the stack for names
// of up to 64 bytes).
func lowerName(dst []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// dropped reports the connection-specific fields (RFC 9113 §8.2.2) and
// the framing that HTTP/2 does itself.
func dropped(ln []byte) bool {
	switch string(ln) {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "content-length", "te":
		return true
	}
	return len(ln) == 0
}
