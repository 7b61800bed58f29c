package rule

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"strings"
)

// The client-certificate matchers (edgeway's own, beside Traefik's
// vocabulary): they read the certificate a listener's client_auth
// verified, and never match a request without one. Values are checked
// and decoded at load; a request compares strings or a digest, of a
// CertIdentity made once per certificate (per TLS connection).

// CertIdentity is what the ClientCert* matchers compare, computed from a
// certificate once (NewCertIdentity) and then only read.
type CertIdentity struct {
	Subject string   // Subject.String(): RFC 2253 form, "CN=alice,O=Example"
	DNS     []string // DNS SANs, compared without regard to ASCII case
	Others  []string // URI, email and IP SANs, as text, compared exactly
	Hash    [sha256.Size]byte
}

// NewCertIdentity computes c's identity.
func NewCertIdentity(c *x509.Certificate) *CertIdentity {
	id := &CertIdentity{Subject: c.Subject.String(), DNS: c.DNSNames, Hash: sha256.Sum256(c.Raw)}
	for _, u := range c.URIs {
		id.Others = append(id.Others, u.String())
	}
	id.Others = append(id.Others, c.EmailAddresses...)
	for _, ip := range c.IPAddresses {
		id.Others = append(id.Others, ip.String())
	}
	return id
}

// certID is the request's certificate identity: ClientID, or one made
// now from ClientCert (a view filled without one); nil: no certificate.
func (r *HTTPRequest) certID() *CertIdentity {
	if r.ClientID != nil {
		return r.ClientID
	}
	if r.ClientCert != nil {
		return NewCertIdentity(r.ClientCert)
	}
	return nil
}

func buildClientCertSubject(_ *parser, a []arg) (httpFn, *Error) {
	v := a[0].val
	return func(r *HTTPRequest) bool { id := r.certID(); return id != nil && id.Subject == v }, nil
}

func buildClientCertSAN(_ *parser, a []arg) (httpFn, *Error) {
	v := a[0].val
	return func(r *HTTPRequest) bool { id := r.certID(); return id != nil && id.hasSAN(v) }, nil
}

// hasSAN reports whether one of the subject alternative names is v: a
// DNS name (case-insensitive), a URI, an email address or an IP.
func (id *CertIdentity) hasSAN(v string) bool {
	for _, d := range id.DNS {
		if asciiEqualFold(d, v) {
			return true
		}
	}
	for _, o := range id.Others {
		if o == v {
			return true
		}
	}
	return false
}

func buildClientCertFingerprint(_ *parser, a []arg) (httpFn, *Error) {
	want, err := hex.DecodeString(strings.ReplaceAll(a[0].val, ":", ""))
	if err != nil || len(want) != sha256.Size {
		return nil, &Error{Offset: a[0].off, Msg: "ClientCertFingerprint value " + quote(a[0].val) +
			" is not a SHA-256 digest (64 hex digits, colons allowed)"}
	}
	return func(r *HTTPRequest) bool {
		id := r.certID()
		return id != nil && bytes.Equal(id.Hash[:], want)
	}, nil
}
