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
// and decoded at load; a request compares strings or a digest.

func buildClientCertSubject(_ *parser, a []arg) (httpFn, *Error) {
	v := a[0].val
	return func(r *HTTPRequest) bool { return r.ClientCert != nil && r.ClientCert.Subject.String() == v }, nil
}

func buildClientCertSAN(_ *parser, a []arg) (httpFn, *Error) {
	v := a[0].val
	return func(r *HTTPRequest) bool { return r.ClientCert != nil && hasSAN(r.ClientCert, v) }, nil
}

// hasSAN reports whether one of c's subject alternative names is v:
// a DNS name (case-insensitive), a URI, an email address or an IP.
func hasSAN(c *x509.Certificate, v string) bool {
	for _, d := range c.DNSNames {
		if asciiEqualFold(d, v) {
			return true
		}
	}
	for _, u := range c.URIs {
		if u.String() == v {
			return true
		}
	}
	for _, e := range c.EmailAddresses {
		if e == v {
			return true
		}
	}
	for _, ip := range c.IPAddresses {
		if ip.String() == v {
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
		if r.ClientCert == nil {
			return false
		}
		sum := sha256.Sum256(r.ClientCert.Raw)
		return bytes.Equal(sum[:], want)
	}, nil
}
