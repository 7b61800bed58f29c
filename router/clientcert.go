package router

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
)

// clientCertHeader carries the client certificate a listener verified
// (`client_auth`) upstream, in Envoy's X-Forwarded-Client-Cert form:
// `Hash=<SHA-256 of the DER, hex>;Subject="<subject>";URI=<uri>;DNS=<name>`,
// one DNS and URI element per SAN. A client's own copy is removed unless
// it comes from a trusted proxy (as the other forwarding fields are).
const clientCertHeader = "X-Forwarded-Client-Cert"

// clientCertValue formats c's element into the exchange's buffer, after
// a trusted proxy's own elements (comma separated).
func (x *exchange) clientCertValue(c *x509.Certificate) string {
	b := x.certBuf[:0]
	if x.trusted {
		if v := x.in.Header.Get(clientCertHeader); v != "" {
			b = append(append(b, v...), ',')
		}
	}
	sum := sha256.Sum256(c.Raw)
	b = append(b, "Hash="...)
	b = hex.AppendEncode(b, sum[:])
	b = appendQuoted(append(b, ";Subject="...), c.Subject.String())
	for _, u := range c.URIs {
		b = appendValue(append(b, ";URI="...), u.String())
	}
	for _, d := range c.DNSNames {
		b = appendValue(append(b, ";DNS="...), d)
	}
	x.certBuf = b
	return bytesString(b)
}

// appendQuoted appends s as an XFCC quoted value: between double
// quotes, with '"' and '\\' escaped and line breaks dropped.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\r', '\n':
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendValue appends s as an XFCC value: as it is, or quoted when it
// holds a character that would end an element or a value.
func appendValue(b []byte, s string) []byte {
	if strings.ContainsAny(s, ",;=\"\\\r\n") {
		return appendQuoted(b, s)
	}
	return append(b, s...)
}
