package rule

import (
	"crypto/x509"
	"net/netip"
)

// HeaderGetter looks up the field values of one request header. name is given
// in canonical form (textproto.CanonicalMIMEHeaderKey); an absent header
// returns nil. http.Header satisfies it.
type HeaderGetter interface {
	Values(name string) []string
}

// HTTPRequest is the small view of a request that HTTP matchers read. Every
// listener (HTTP/1, h2, h3) and `edgeway explain` fill one in, so routing
// never depends on *http.Request. Fields hold the normalised values of
// docs/rules.md §3; see CanonicalHost and NormalizePath.
type HTTPRequest struct {
	Method   string       // as sent, case-sensitive
	Host     string       // canonical host (§3.2): port stripped, lower-cased
	Path     string       // routing path (§3.3)
	RawQuery string       // raw query, after semicolon handling (§3.1 step 4)
	Header   HeaderGetter // request headers; Host is never among them
	ClientIP netip.Addr   // TCP peer address (§3.5); zero when unknown
	// ClientCert is the client certificate the listener verified
	// (client_auth), for the ClientCert* matchers; nil: none.
	ClientCert *x509.Certificate
	// ClientID is ClientCert's identity, made once per certificate (a
	// listener's connection) and shared by its requests; nil: the
	// matchers make one from ClientCert when they need it.
	ClientID *CertIdentity
	// Token answers the JWTClaim matcher; nil: JWTClaim never matches.
	Token TokenClaims
}

// TCPHello is the view of a TLS connection that TCP matchers read.
type TCPHello struct {
	SNI      string     // trimmed and lower-cased; "" for non-TLS connections
	ALPN     []string   // protocols the client offered, in its order
	ClientIP netip.Addr // TCP peer address; zero when unknown
}
