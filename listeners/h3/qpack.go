package h3

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/http2/hpack"
)

// QPACK (RFC 9204) without a dynamic table: this end advertises
// SETTINGS_QPACK_MAX_TABLE_CAPACITY 0, so a peer may only use the static
// table and literals (§3.2.3), and it never inserts into the peer's table.
// That costs some bytes per header block and removes the encoder and
// decoder streams' state, and with it the blocked-stream attacks on it.

// Field is one decoded header or trailer field.
type Field struct {
	Name, Value string
}

// errQPACK is a field section this decoder refuses: the connection error
// QPACK_DECOMPRESSION_FAILED.
var errQPACK = errors.New("qpack: decompression failed")

// staticTable is RFC 9204 Appendix A.
var staticTable = [...]Field{
	{":authority", ""}, {":path", "/"}, {"age", "0"}, {"content-disposition", ""},
	{"content-length", "0"}, {"cookie", ""}, {"date", ""}, {"etag", ""},
	{"if-modified-since", ""}, {"if-none-match", ""}, {"last-modified", ""}, {"link", ""},
	{"location", ""}, {"referer", ""}, {"set-cookie", ""}, {":method", "CONNECT"},
	{":method", "DELETE"}, {":method", "GET"}, {":method", "HEAD"}, {":method", "OPTIONS"},
	{":method", "POST"}, {":method", "PUT"}, {":scheme", "http"}, {":scheme", "https"},
	{":status", "103"}, {":status", "200"}, {":status", "304"}, {":status", "404"},
	{":status", "503"}, {"accept", "*/*"}, {"accept", "application/dns-message"}, {"accept-encoding", "gzip, deflate, br"},
	{"accept-ranges", "bytes"}, {"access-control-allow-headers", "cache-control"}, {"access-control-allow-headers", "content-type"}, {"access-control-allow-origin", "*"},
	{"cache-control", "max-age=0"}, {"cache-control", "max-age=2592000"}, {"cache-control", "max-age=604800"}, {"cache-control", "no-cache"},
	{"cache-control", "no-store"}, {"cache-control", "public, max-age=31536000"}, {"content-encoding", "br"}, {"content-encoding", "gzip"},
	{"content-type", "application/dns-message"}, {"content-type", "application/javascript"}, {"content-type", "application/json"}, {"content-type", "application/x-www-form-urlencoded"},
	{"content-type", "image/gif"}, {"content-type", "image/jpeg"}, {"content-type", "image/png"}, {"content-type", "text/css"},
	{"content-type", "text/html; charset=utf-8"}, {"content-type", "text/plain"}, {"content-type", "text/plain;charset=utf-8"}, {"range", "bytes=0-"},
	{"strict-transport-security", "max-age=31536000"}, {"strict-transport-security", "max-age=31536000; includesubdomains"}, {"strict-transport-security", "max-age=31536000; includesubdomains; preload"}, {"vary", "accept-encoding"},
	{"vary", "origin"}, {"x-content-type-options", "nosniff"}, {"x-xss-protection", "1; mode=block"}, {":status", "100"},
	{":status", "204"}, {":status", "206"}, {":status", "302"}, {":status", "400"},
	{":status", "403"}, {":status", "421"}, {":status", "425"}, {":status", "500"},
	{"accept-language", ""}, {"access-control-allow-credentials", "FALSE"}, {"access-control-allow-credentials", "TRUE"}, {"access-control-allow-headers", "*"},
	{"access-control-allow-methods", "get"}, {"access-control-allow-methods", "get, post, options"}, {"access-control-allow-methods", "options"}, {"access-control-expose-headers", "content-length"},
	{"access-control-request-headers", "content-type"}, {"access-control-request-method", "get"}, {"access-control-request-method", "post"}, {"alt-svc", "clear"},
	{"authorization", ""}, {"content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"}, {"early-data", "1"}, {"expect-ct", ""},
	{"forwarded", ""}, {"if-range", ""}, {"origin", ""}, {"purpose", "prefetch"},
	{"server", ""}, {"timing-allow-origin", "*"}, {"upgrade-insecure-requests", "1"}, {"user-agent", ""},
	{"x-forwarded-for", ""}, {"x-frame-options", "deny"}, {"x-frame-options", "sameorigin"},
}

// staticIndex maps a field to its static index, and a name to the index
// of its first entry, for the encoder; built once.
var staticFull, staticName = func() (map[Field]int, map[string]int) {
	full, name := map[Field]int{}, map[string]int{}
	for i, f := range staticTable {
		full[f] = i
		if _, ok := name[f.Name]; !ok {
			name[f.Name] = i
		}
	}
	return full, name
}()

// appendFieldSection appends the encoded field section (§4.5) of fields;
// names must already be lowercase.
func appendFieldSection(b []byte, fields []Field) []byte {
	b = append(b, 0, 0) // Required Insert Count 0, Base 0
	for _, f := range fields {
		b = appendField(b, f)
	}
	return b
}

func appendField(b []byte, f Field) []byte {
	if i, ok := staticFull[f]; ok {
		return appendInt(b, 0xc0, 6, uint64(i)) // indexed, static
	}
	if i, ok := staticName[f.Name]; ok {
		b = appendInt(b, 0x50, 4, uint64(i)) // literal, static name reference
		return appendString(b, 0x80, 7, f.Value)
	}
	b = appendString(b, 0x28, 3, f.Name) // literal name (H at 0x08)
	return appendString(b, 0x80, 7, f.Value)
}

// appendInt appends an integer with an n-bit prefix (RFC 7541 §5.1) and
// the bits of first above the prefix.
func appendInt(b []byte, first byte, n uint, v uint64) []byte {
	max := uint64(1)<<n - 1
	if v < max {
		return append(b, first|byte(v))
	}
	b = append(b, first|byte(max))
	v -= max
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// appendString appends a string literal with an n-bit length prefix;
// huff is the Huffman flag's bit in the first byte, which the caller's
// pattern (first) also carries.
func appendString(b []byte, first byte, n uint, s string) []byte {
	huff := byte(1) << n
	first &^= huff
	if hl := hpack.HuffmanEncodeLength(s); hl < uint64(len(s)) {
		b = appendInt(b, first|huff, n, hl)
		return hpack.AppendHuffmanString(b, s)
	}
	b = appendInt(b, first, n, uint64(len(s)))
	return append(b, s...)
}

// readInt reads an integer with an n-bit prefix from p.
func readInt(p []byte, n uint) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, nil, errQPACK
	}
	max := uint64(1)<<n - 1
	v := uint64(p[0]) & max
	p = p[1:]
	if v < max {
		return v, p, nil
	}
	for shift := uint(0); ; shift += 7 {
		if len(p) == 0 || shift > 56 {
			return 0, nil, errQPACK
		}
		c := p[0]
		p = p[1:]
		v += uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, p, nil
		}
	}
}

// readString reads a string literal whose Huffman flag is the bit above
// an n-bit length prefix.
func readString(p []byte, n uint, limit int) (string, []byte, error) {
	if len(p) == 0 {
		return "", nil, errQPACK
	}
	huff := p[0]&(1<<n) != 0
	l, p, err := readInt(p, n)
	if err != nil || l > uint64(len(p)) {
		return "", nil, errQPACK
	}
	if l > uint64(limit) {
		return "", nil, errFieldsTooLarge
	}
	raw := p[:l]
	p = p[l:]
	if !huff {
		return string(raw), p, nil
	}
	s, err := hpack.HuffmanDecodeToString(raw)
	if err != nil {
		return "", nil, errQPACK
	}
	if len(s) > limit {
		return "", nil, errFieldsTooLarge
	}
	return s, p, nil
}

// decodeFieldSection decodes an encoded field section that uses only the
// static table; limit bounds the decoded size (names plus values plus 32
// per field, as SETTINGS_MAX_FIELD_SECTION_SIZE counts, RFC 9114 §4.2.2).
func decodeFieldSection(p []byte, limit int, fn func(Field) error) error {
	ric, p, err := readInt(p, 8)
	if err != nil || ric != 0 {
		return errQPACK // a dynamic table reference we never allowed
	}
	if _, p, err = readInt(p, 7); err != nil {
		return err
	}
	size := 0
	for len(p) > 0 {
		var f Field
		if f, p, err = decodeField(p, limit); err != nil {
			return err
		}
		if size += len(f.Name) + len(f.Value) + 32; size > limit {
			return errFieldsTooLarge
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

var errFieldsTooLarge = errors.New("h3: header fields too large")

func decodeField(p []byte, limit int) (Field, []byte, error) {
	c := p[0]
	switch {
	case c&0x80 != 0: // indexed field line
		if c&0x40 == 0 {
			return Field{}, nil, errQPACK // dynamic
		}
		i, p, err := readInt(p, 6)
		if err != nil || i >= uint64(len(staticTable)) {
			return Field{}, nil, errQPACK
		}
		return staticTable[i], p, nil
	case c&0xc0 == 0x40: // literal with name reference
		if c&0x10 == 0 {
			return Field{}, nil, errQPACK
		}
		i, p, err := readInt(p, 4)
		if err != nil || i >= uint64(len(staticTable)) {
			return Field{}, nil, errQPACK
		}
		v, p, err := readString(p, 7, limit)
		return Field{staticTable[i].Name, v}, p, err
	case c&0xe0 == 0x20: // literal with literal name
		n, p, err := readString(p, 3, limit)
		if err != nil {
			return Field{}, nil, err
		}
		v, p, err := readString(p, 7, limit)
		return Field{n, v}, p, err
	default: // post-base forms: dynamic
		return Field{}, nil, errQPACK
	}
}

// lowerName returns a field name as HTTP/3 sends it: lowercase.
func lowerName(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

func (f Field) String() string { return fmt.Sprintf("%s: %s", f.Name, f.Value) }
