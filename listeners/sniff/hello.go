package sniff

import (
	"strings"

	"golang.org/x/crypto/cryptobyte"

	"github.com/edgeway/edgeway/internal/alpn"
)

// Hello is what a ClientHello says about where the client wants to go.
type Hello struct {
	// SNI is the server_name extension's host_name, lower-cased (ASCII)
	// and with one trailing dot removed; "" when the hello has no
	// server_name extension. With ECH it is the outer, public name.
	SNI string
	// ALPN lists the protocols of the ALPN extension (RFC 7301) in the
	// client's order; nil without one.
	ALPN []string
	// Version is the highest TLS version offered: the largest of 0x0301
	// (TLS 1.0) to 0x0304 (TLS 1.3) in supported_versions, or the legacy
	// version field without that extension.
	Version uint16
	// ECH reports an encrypted_client_hello extension (RFC 9849 draft
	// codepoint 0xfe0d): SNI then names the client-facing server.
	ECH bool
}

// Extension codepoints (IANA TLS ExtensionType registry).
const (
	extServerName        = 0
	extALPN              = 16
	extSupportedVersions = 43
	extECH               = 0xfe0d
)

// Parse parses the TLS record(s) at the start of b that carry a
// ClientHello and returns what it says and how many bytes the records
// take (bytes after them, such as early data, are left alone). With
// ErrIncomplete the int is the number of bytes needed (see
// ErrIncomplete); with ErrNotTLS, ErrTooLarge or an ErrMalformed error it
// is 0. Parse never panics and allocates only the strings it returns (and
// a copy of a fragmented hello).
func Parse(b []byte) (Hello, int, error) {
	msg, n, err := records(b)
	if err != nil {
		return Hello{}, n, err
	}
	h, err := parseHello(msg[handshakeHeaderLen:])
	if err != nil {
		return Hello{}, 0, err
	}
	return h, n, nil
}

// parseHello parses a ClientHello's body (RFC 8446 §4.1.2).
func parseHello(body []byte) (Hello, error) {
	s := cryptobyte.String(body)
	var h Hello
	var sessionID, suites, compression, exts cryptobyte.String
	switch {
	case !s.ReadUint16(&h.Version) || !s.Skip(32):
		return Hello{}, malformed("short version or random")
	case !s.ReadUint8LengthPrefixed(&sessionID) || len(sessionID) > 32:
		return Hello{}, malformed("bad legacy_session_id")
	case !s.ReadUint16LengthPrefixed(&suites) || len(suites) < 2 || len(suites)%2 != 0:
		return Hello{}, malformed("bad cipher_suites")
	case !s.ReadUint8LengthPrefixed(&compression) || len(compression) < 1:
		return Hello{}, malformed("bad legacy_compression_methods")
	case s.Empty():
		return h, nil // no extensions (TLS 1.0 to 1.2 allow that)
	case !s.ReadUint16LengthPrefixed(&exts) || !s.Empty():
		return Hello{}, malformed("extensions length does not match the message")
	}
	var seen extSet
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return Hello{}, malformed("truncated extension")
		}
		if seen.add(typ) {
			return Hello{}, malformed("duplicate extension %d", typ)
		}
		if err := h.extension(typ, data); err != nil {
			return Hello{}, err
		}
	}
	return h, nil
}

// extension records what extension typ says, for those Hello reports.
func (h *Hello) extension(typ uint16, data cryptobyte.String) error {
	switch typ {
	case extServerName:
		return h.serverName(data)
	case extALPN:
		return h.alpn(data)
	case extSupportedVersions:
		return h.supportedVersions(data)
	case extECH:
		h.ECH = true
	}
	return nil
}

// serverName parses server_name (RFC 6066 §3). Only host_name (0) is
// defined; a list with another type, or several names, is refused.
func (h *Hello) serverName(data cryptobyte.String) error {
	var list, name cryptobyte.String
	var typ uint8
	if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() {
		return malformed("server_name list length")
	}
	if !list.ReadUint8(&typ) || !list.ReadUint16LengthPrefixed(&name) {
		return malformed("truncated server_name")
	}
	switch {
	case typ != 0:
		return malformed("server_name of type %d, not host_name", typ)
	case !list.Empty():
		return malformed("more than one server_name")
	}
	if n := len(name); n > 0 && name[n-1] == '.' {
		name = name[:n-1]
	}
	if len(name) == 0 {
		return malformed("empty server_name")
	}
	var sb strings.Builder
	sb.Grow(len(name))
	for _, c := range name {
		if c <= ' ' || c >= 0x7f {
			return malformed("server_name holds byte %#02x", c)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		sb.WriteByte(c)
	}
	h.SNI = sb.String()
	return nil
}

// alpn parses application_layer_protocol_negotiation (RFC 7301 §3.1).
func (h *Hello) alpn(data cryptobyte.String) error {
	var list cryptobyte.String
	if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() || list.Empty() {
		return malformed("ALPN list length")
	}
	count := 0
	for l := list; !l.Empty(); count++ {
		var p cryptobyte.String
		if !l.ReadUint8LengthPrefixed(&p) || p.Empty() {
			return malformed("empty or truncated ALPN protocol")
		}
	}
	h.ALPN = make([]string, 0, count)
	for !list.Empty() {
		var p cryptobyte.String
		list.ReadUint8LengthPrefixed(&p)
		h.ALPN = append(h.ALPN, protocolName(p))
	}
	return nil
}

// protocolName returns p as a string, without allocating for the common
// ones.
func protocolName(p []byte) string {
	switch string(p) {
	case "h2":
		return "h2"
	case "http/1.1":
		return "http/1.1"
	case "h3":
		return "h3"
	case alpn.ACME:
		return alpn.ACME
	case "http/1.0":
		return "http/1.0"
	}
	return string(p)
}

// supportedVersions parses the client's supported_versions (RFC 8446
// §4.2.1) and keeps the highest known version.
func (h *Hello) supportedVersions(data cryptobyte.String) error {
	var list cryptobyte.String
	if !data.ReadUint8LengthPrefixed(&list) || !data.Empty() || list.Empty() || len(list)%2 != 0 {
		return malformed("supported_versions list length")
	}
	best := uint16(0)
	for !list.Empty() {
		var v uint16
		list.ReadUint16(&v)
		if v >= 0x0301 && v <= 0x0304 && v > best {
			best = v
		}
	}
	if best != 0 {
		h.Version = best
	}
	return nil
}

// extSet remembers extension types seen, to refuse duplicates (RFC 8446
// §4.2) in time linear in their number.
type extSet struct {
	n     int
	small [32]uint16
	all   *[1 << 16 / 64]uint64 // every type seen, once there are many
}

// add records typ and reports whether it was there already.
func (s *extSet) add(typ uint16) bool {
	if s.all == nil && s.n < len(s.small) {
		for _, t := range s.small[:s.n] {
			if t == typ {
				return true
			}
		}
		s.small[s.n] = typ
		s.n++
		return false
	}
	if s.all == nil {
		s.all = new([1 << 16 / 64]uint64)
		for _, t := range s.small {
			s.all[t/64] |= 1 << (t % 64)
		}
	}
	w, bit := &s.all[typ/64], uint64(1)<<(typ%64)
	dup := *w&bit != 0
	*w |= bit
	return dup
}
