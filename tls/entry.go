package edgetls

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Sources of certificates, as List reports them.
const (
	SourceFile       = "file"        // a cert line of the tls block
	SourceSelfSigned = "self-signed" // a self_signed line of the tls block
	SourceACME       = "acme"        // put by the ACME client
)

// keyAlgo orders the certificates of one name: the first the client
// supports is served, so ECDSA (small, fast) comes before Ed25519 (fewer
// clients) and RSA (everyone, slower).
type keyAlgo uint8

const (
	algoECDSA keyAlgo = iota
	algoEd25519
	algoRSA
)

// entry is one certificate of the store with where it came from. Entries
// are immutable once published; the mutable part (the served certificate
// with its OCSP staple) is in the shared certState.
type entry struct {
	source            string
	certFile, keyFile string
	isDefault         bool
	names             []string // normalised DNS SANs, "*.x" for wildcards
	nameKey           string   // sorted names, joined: equal for siblings
	algo              keyAlgo
	keyType           string
	asked             string // self-signed: the names asked for, joined
	// gen orders certificates by when they last changed: for a name held
	// by several sources the one with the highest gen is served.
	gen uint64
	st  *certState
}

// certState is a certificate chain with the value handshakes are given.
// Entries of the same chain (before and after a reload, or a file and an
// ACME copy) share one certState, so a staple survives a reload.
type certState struct {
	hash   [32]byte
	base   *tls.Certificate // as loaded or put; never mutated
	leaf   *x509.Certificate
	issuer *x509.Certificate // nil when the chain does not hold it

	// served is base, or a copy of base with an OCSP staple. Handshakes
	// load it; the stapler stores a new value, never changes the old one.
	served atomic.Pointer[tls.Certificate]

	mu   sync.Mutex // guards ocsp
	ocsp ocspStatus

	// stop cancels the running stapler; guarded by Store.mu.
	stop context.CancelFunc
}

// ocspStatus is what List reports of a certificate's stapling.
type ocspStatus struct {
	raw        []byte // the stapled response, nil when none
	thisUpdate time.Time
	nextUpdate time.Time
	lastFetch  time.Time
	lastErr    string
}

// newCertState wraps cert, whose Leaf is set.
func newCertState(cert *tls.Certificate) *certState {
	h := sha256.New()
	for _, der := range cert.Certificate {
		h.Write(der)
	}
	st := &certState{base: cert, leaf: cert.Leaf}
	h.Sum(st.hash[:0])
	if len(cert.Certificate) > 1 {
		if iss, err := x509.ParseCertificate(cert.Certificate[1]); err == nil &&
			cert.Leaf.CheckSignatureFrom(iss) == nil {
			st.issuer = iss
		}
	}
	st.served.Store(cert)
	return st
}

// newEntry describes cert (Leaf set) for source.
func newEntry(source string, cert *tls.Certificate) *entry {
	e := &entry{source: source, st: newCertState(cert)}
	e.names = leafNames(cert.Leaf)
	e.nameKey = nameKeyOf(e.names)
	e.algo, e.keyType = keyKind(cert.Leaf)
	return e
}

// leafNames returns the DNS names of a certificate, normalised. The
// subject common name is ignored, as browsers and crypto/tls do.
func leafNames(leaf *x509.Certificate) []string {
	names := make([]string, 0, len(leaf.DNSNames))
	for _, n := range leaf.DNSNames {
		if n = normalizeName(n); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// normalizeName lowercases an ASCII name and drops one trailing dot.
func normalizeName(n string) string {
	n = strings.TrimSuffix(n, ".")
	return strings.ToLower(n)
}

func keyKind(leaf *x509.Certificate) (keyAlgo, string) {
	switch k := leaf.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return algoECDSA, "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return algoEd25519, "Ed25519"
	case *rsa.PublicKey:
		return algoRSA, fmt.Sprintf("RSA %d", k.N.BitLen())
	}
	return algoRSA, fmt.Sprintf("%T", leaf.PublicKey)
}
