package proxyproto

import "encoding/binary"

// TLV is one type-length-value field of a v2 header (spec §2.2.1).
type TLV struct {
	// Type is the field's type: one of the Type constants, or a custom
	// (0xE0-0xEF), experimental or future one.
	Type byte
	// Value is the field's value.
	Value []byte
}

// TLV types (spec §2.2.1) and the sub-types of TypeSSL (§2.2.5).
const (
	TypeALPN      = 0x01 // the negotiated application protocol
	TypeAuthority = 0x02 // the host name the client asked for (SNI)
	TypeCRC32C    = 0x03 // checksum of the header; Parse checks it
	TypeNoop      = 0x04 // padding; Parse leaves it out of Header.TLVs
	TypeUniqueID  = 0x05 // an opaque connection ID of up to 128 bytes
	TypeSSL       = 0x20 // the client's TLS connection to the proxy
	TypeNetNS     = 0x30 // the network namespace name

	SubtypeSSLVersion = 0x21
	SubtypeSSLCN      = 0x22
	SubtypeSSLCipher  = 0x23
	SubtypeSSLSigAlg  = 0x24
	SubtypeSSLKeyAlg  = 0x25
)

// TLV returns the value of h's first TLV of type typ.
func (h *Header) TLV(typ byte) ([]byte, bool) {
	for _, t := range h.TLVs {
		if t.Type == typ {
			return t.Value, true
		}
	}
	return nil, false
}

// ALPN returns the application protocol the client negotiated with the
// proxy (TypeALPN), or "".
func (h *Header) ALPN() string {
	v, _ := h.TLV(TypeALPN)
	return string(v)
}

// Authority returns the host name the client sent the proxy (TypeAuthority,
// usually its SNI), or "".
func (h *Header) Authority() string {
	v, _ := h.TLV(TypeAuthority)
	return string(v)
}

// SSL is what a TypeSSL TLV says about the client's connection to the
// proxy (spec §2.2.5).
type SSL struct {
	// Client holds the PP2_CLIENT_* bits: ClientSSL, ClientCertConn,
	// ClientCertSess.
	Client byte
	// Verify is 0 when the client presented a certificate that was
	// verified, non-zero otherwise.
	Verify uint32
	// Version, CN, Cipher, SigAlg and KeyAlg are the sub-TLVs' values,
	// "" when absent: the TLS version ("TLSv1.3"), the client
	// certificate's Common Name, the cipher, and the certificate's
	// signature and key algorithms.
	Version, CN, Cipher, SigAlg, KeyAlg string
}

// Client bits of SSL.Client.
const (
	ClientSSL      = 0x01 // the client connected over TLS
	ClientCertConn = 0x02 // it presented a certificate on this connection
	ClientCertSess = 0x04 // it presented one in the TLS session
)

// SSL parses h's TypeSSL TLV. ok is false when there is none or it is
// malformed.
func (h *Header) SSL() (s SSL, ok bool) {
	v, ok := h.TLV(TypeSSL)
	if !ok || len(v) < 5 {
		return SSL{}, false
	}
	s.Client, s.Verify = v[0], binary.BigEndian.Uint32(v[1:5])
	for sub := v[5:]; len(sub) > 0; {
		if len(sub) < 3 || len(sub) < 3+int(binary.BigEndian.Uint16(sub[1:])) {
			return SSL{}, false
		}
		end := 3 + int(binary.BigEndian.Uint16(sub[1:]))
		val := string(sub[3:end])
		switch sub[0] {
		case SubtypeSSLVersion:
			s.Version = val
		case SubtypeSSLCN:
			s.CN = val
		case SubtypeSSLCipher:
			s.Cipher = val
		case SubtypeSSLSigAlg:
			s.SigAlg = val
		case SubtypeSSLKeyAlg:
			s.KeyAlg = val
		}
		sub = sub[end:]
	}
	return s, true
}
