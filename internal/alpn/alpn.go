// Package alpn names the ALPN protocol identifiers (RFC 7301) edgeway
// speaks or refuses, once for every package that compares them: the
// listeners, the ClientHello reader, the certificate store and the rule
// language (which reserves ACME's). It holds constants only, so that any
// layer may import it.
package alpn

const (
	// ACME is the protocol of ACME's TLS-ALPN-01 validation (RFC 8737):
	// a hello that offers only it is answered with the challenge
	// certificate and never served or passed through.
	ACME = "acme-tls/1"
	// H2 is HTTP/2 over TLS (RFC 9113).
	H2 = "h2"
	// HTTP11 is HTTP/1.1.
	HTTP11 = "http/1.1"
	// H3 is HTTP/3 (RFC 9114).
	H3 = "h3"
)
