package router

import (
	"crypto/x509"
	"encoding/hex"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/edgeway/edgeway/routes/rule"
)

// clientCertHeader carries the client certificate a listener verified
// (`client_auth`) upstream, in Envoy's X-Forwarded-Client-Cert form:
// `Hash=<SHA-256 of the DER, hex>;Subject="<subject>";URI=<uri>;DNS=<name>`,
// one DNS and URI element per SAN. A client's own copy is removed unless
// it comes from a trusted proxy (as the other forwarding fields are).
const clientCertHeader = "X-Forwarded-Client-Cert"

// certIdentity is a client certificate's identity: what the ClientCert*
// matchers compare and its XFCC element, made once per certificate. A
// TLS connection's requests all carry the one *x509.Certificate that
// crypto/tls parsed at its handshake (HTTP/1, HTTP/2 and HTTP/3 alike),
// so this is once per connection, with no hook in the listeners.
type certIdentity struct {
	rule *rule.CertIdentity
	xfcc string // Hash=...;Subject="...";URI=...;DNS=...
}

// certIdentities maps a certificate, held weakly, to its identity. The
// entry goes when the certificate is collected (its connection ended),
// so the map holds the live connections' certificates only; a
// certificate allocated later at the same address has a new weak handle,
// hence a new key.
var certIdentities sync.Map // weak.Pointer[x509.Certificate] -> *certIdentity

// certIdentityOf returns c's identity: one map lookup after the first
// request of c's connection.
func certIdentityOf(c *x509.Certificate) *certIdentity {
	k := weak.Make(c)
	if v, ok := certIdentities.Load(k); ok {
		return v.(*certIdentity)
	}
	id := &certIdentity{rule: rule.NewCertIdentity(c)}
	id.xfcc = string(appendXFCC(nil, id.rule, c))
	if _, loaded := certIdentities.LoadOrStore(k, id); !loaded {
		// The cleanup holds the key and nothing that reaches c.
		runtime.AddCleanup(c, func(k weak.Pointer[x509.Certificate]) { certIdentities.Delete(k) }, k)
	}
	return id
}

// appendXFCC appends c's XFCC element.
func appendXFCC(b []byte, id *rule.CertIdentity, c *x509.Certificate) []byte {
	b = append(b, "Hash="...)
	b = hex.AppendEncode(b, id.Hash[:])
	b = appendQuoted(append(b, ";Subject="...), id.Subject)
	for _, u := range c.URIs {
		b = appendValue(append(b, ";URI="...), u.String())
	}
	for _, d := range c.DNSNames {
		b = appendValue(append(b, ";DNS="...), d)
	}
	return b
}

// clientCertValue is the XFCC value for c: its element, after a trusted
// proxy's own elements (comma separated, in the exchange's buffer).
func (x *exchange) clientCertValue(c *x509.Certificate) string {
	id := x.certID
	if id == nil {
		id = certIdentityOf(c)
	}
	if !x.trusted {
		return id.xfcc
	}
	v := x.in.Header.Get(clientCertHeader)
	if v == "" {
		return id.xfcc
	}
	x.certBuf = append(append(append(x.certBuf[:0], v...), ','), id.xfcc...)
	// Lifetime: the value views the exchange's own buffer, written once
	// per request; it goes into the outbound header, which the upstream
	// client serialises (or copies, for HTTP/2) before finish, and a
	// mirror copy clones.
	return bytesString(x.certBuf)
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
