package edgetls

import (
	"crypto/tls"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/alpn"
)

// ErrNoChallenge is returned by GetCertificate for a ClientHello that
// offers only acme-tls/1 for a name without a pending challenge: such a
// hello is a validation attempt, never a client to serve.
var ErrNoChallenge = errors.New("tls: no pending acme-tls/1 challenge for this name")

// RenewalStatus is what the ACME client reports about one name, shown with
// its certificate in List (CertInfo.Renewal).
type RenewalStatus struct {
	// NextAttempt is when the next order (renewal or retry) is planned.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
	// LastAttempt is when the last order started; LastError says why it
	// failed ("" after a success) and Reason classifies it (rate_limited,
	// ca_unreachable, challenge_failed, order_rejected, storage, other).
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
	Reason      string    `json:"reason,omitempty"`
	// Failures counts the failed attempts since the last success.
	Failures int `json:"failures"`
}

// acmeState holds the TLS-ALPN-01 challenge certificates and the renewal
// status of ACME names. It is apart from the index: it changes during an
// order, and only ACME validation handshakes and List read it.
type acmeState struct {
	mu         sync.Mutex
	challenges map[string]*tls.Certificate // by normalised name
	status     map[string]RenewalStatus    // by normalised name
	// lookup finds a challenge certificate another instance published
	// (SetChallengeLookup); nil for none.
	lookup func(name string) *tls.Certificate
}

// SetChallengeLookup makes GetCertificate ask f for the TLS-ALPN-01
// certificate of a name it holds none for: with several instances behind
// one load balancer, the CA's validation may reach an instance other
// than the one that ordered. f is called only for validation hellos
// (acme-tls/1 alone) and must bound its own wait; nil removes it.
func (s *Store) SetChallengeLookup(f func(name string) *tls.Certificate) {
	a := &s.acme
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lookup = f
}

// SetChallenge makes GetCertificate answer a ClientHello for name that
// offers exactly the ALPN protocol acme-tls/1 with cert, the TLS-ALPN-01
// challenge certificate (RFC 8737 section 3). A nil cert removes it. Such
// hellos never get a served certificate, and other hellos never get a
// challenge certificate.
func (s *Store) SetChallenge(name string, cert *tls.Certificate) {
	a := &s.acme
	a.mu.Lock()
	defer a.mu.Unlock()
	name = normalizeName(name)
	if cert == nil {
		delete(a.challenges, name)
		return
	}
	if a.challenges == nil {
		a.challenges = make(map[string]*tls.Certificate)
	}
	a.challenges[name] = cert
}

// SetRenewalStatus records the ACME client's view of name, for List.
func (s *Store) SetRenewalStatus(name string, st RenewalStatus) {
	a := &s.acme
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.status == nil {
		a.status = make(map[string]RenewalStatus)
	}
	a.status[normalizeName(name)] = st
}

// RenewalStatuses returns the status of every name the ACME client
// reported, including names that have no certificate yet.
func (s *Store) RenewalStatuses() map[string]RenewalStatus {
	a := &s.acme
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.status)
}

// isACMEHello reports whether a ClientHello is a TLS-ALPN-01 validation:
// it offers acme-tls/1 and nothing else.
func isACMEHello(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == alpn.ACME
}

func (s *Store) challengeCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	a := &s.acme
	name := normalizeName(hello.ServerName)
	a.mu.Lock()
	c, lookup := a.challenges[name], a.lookup
	a.mu.Unlock()
	if c == nil && lookup != nil && name != "" {
		c = lookup(name)
	}
	if c == nil {
		return nil, ErrNoChallenge
	}
	return c, nil
}

// annotate adds the renewal status to the ACME certificates of out.
func (a *acmeState) annotate(out []CertInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range out {
		if out[i].Source != SourceACME || len(out[i].Names) == 0 {
			continue
		}
		if st, ok := a.status[out[i].Names[0]]; ok {
			out[i].Renewal = &st
		}
	}
}
