package edgetls

import (
	"slices"
	"time"
)

// CertInfo describes one certificate of the store for the admin API.
type CertInfo struct {
	// Names are the DNS names the certificate covers, lowercased.
	Names []string `json:"names"`
	// Source is SourceFile, SourceSelfSigned or the source given to Put.
	Source string `json:"source"`
	// CertFile and KeyFile are the files of a SourceFile certificate.
	CertFile  string    `json:"cert_file,omitempty"`
	KeyFile   string    `json:"key_file,omitempty"`
	NotBefore time.Time `json:"not_before"`
	NotAfter  time.Time `json:"not_after"`
	// Issuer is the issuer's distinguished name.
	Issuer string `json:"issuer"`
	// KeyType is "ECDSA P-256", "RSA 2048", "Ed25519"...
	KeyType string `json:"key_type"`
	// Default is set on the certificate served without SNI or for a name
	// no certificate covers.
	Default bool `json:"default"`
	// Active is false when a newer source holds all of its names.
	Active bool     `json:"active"`
	OCSP   OCSPInfo `json:"ocsp"`
	// Renewal is the ACME client's status for an acme certificate (keyed
	// by its first name): next planned order, last failure; nil for other
	// sources.
	Renewal *RenewalStatus `json:"renewal,omitempty"`
}

// OCSPInfo is the stapling state of a certificate.
type OCSPInfo struct {
	// Responder is the first OCSP server the certificate names, "" when
	// none (then nothing is stapled).
	Responder string `json:"responder,omitempty"`
	// Stapled is set while a good, unexpired response is served.
	Stapled    bool      `json:"stapled"`
	ThisUpdate time.Time `json:"this_update,omitzero"`
	NextUpdate time.Time `json:"next_update,omitzero"`
	// LastFetch is when the responder was last asked.
	LastFetch time.Time `json:"last_fetch,omitzero"`
	// LastError is why the last fetch failed or was not stapled; "" after
	// a success.
	LastError string `json:"last_error,omitempty"`
}

func (e *entry) info(isDefault, active bool) CertInfo {
	leaf := e.st.leaf
	ci := CertInfo{
		Names:     slices.Clone(e.names),
		Source:    e.source,
		CertFile:  e.certFile,
		KeyFile:   e.keyFile,
		NotBefore: leaf.NotBefore,
		NotAfter:  leaf.NotAfter,
		Issuer:    leaf.Issuer.String(),
		KeyType:   e.keyType,
		Default:   isDefault,
		Active:    active,
	}
	if len(leaf.OCSPServer) > 0 {
		ci.OCSP.Responder = leaf.OCSPServer[0]
	}
	e.st.mu.Lock()
	o := e.st.ocsp
	e.st.mu.Unlock()
	ci.OCSP.Stapled = o.raw != nil
	ci.OCSP.ThisUpdate, ci.OCSP.NextUpdate = o.thisUpdate, o.nextUpdate
	ci.OCSP.LastFetch, ci.OCSP.LastError = o.lastFetch, o.lastErr
	return ci
}
