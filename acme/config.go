package acme

import (
	"crypto/tls"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	edgetls "github.com/edgeway/edgeway/tls"
)

// Challenge types, in Config.Challenges.
const (
	HTTP01    = "http-01"
	TLSALPN01 = "tls-alpn-01"
)

// Failure reasons, as Event.Reason and RenewalStatus.Reason give them.
const (
	ReasonRateLimited     = "rate_limited"
	ReasonCAUnreachable   = "ca_unreachable"
	ReasonChallengeFailed = "challenge_failed"
	ReasonOrderRejected   = "order_rejected"
	ReasonStorage         = "storage"
	ReasonOther           = "other"
)

// CertStore receives what the manager obtains: edgetls.Store implements
// it. Put must swap the certificate in atomically; SetChallenge serves a
// TLS-ALPN-01 certificate (nil removes it).
type CertStore interface {
	Put(source string, cert *tls.Certificate) error
	SetChallenge(name string, cert *tls.Certificate)
	SetRenewalStatus(name string, st edgetls.RenewalStatus)
}

// Interface guard.
var _ CertStore = (*edgetls.Store)(nil)

// Event is reported to Config.Observe for metrics and tests.
type Event struct {
	Name string
	// Kind is "order" (an order starts), "issued" (a certificate was
	// stored and served), "loaded" (a stored certificate was served at
	// start) or "failure".
	Kind string
	// Reason classifies a failure (ReasonRateLimited...); "" otherwise.
	Reason string
	Err    error
}

// Config configures a Manager. Directory, Storage and Store are
// required; every other field has a default.
type Config struct {
	// Directory is the CA's directory URL.
	Directory string
	// Email is the account's contact; "" registers without one.
	Email string
	// AcceptTerms must be true: registering agrees to the CA's terms.
	AcceptTerms bool
	// EABKeyID and EABHMAC (base64url) bind the account to an account at
	// the CA (RFC 8555 section 7.3.4); "" for none.
	EABKeyID, EABHMAC string
	// Names are the names to obtain certificates for, one certificate
	// per name. Names not listed are never ordered.
	Names []string
	// Challenges are tried in order: the first the CA offers for an
	// authorization is used. Default HTTP01, TLSALPN01.
	Challenges []string
	// KeyType is "ecdsa" (P-256) or "rsa" (2048 bits). Default "ecdsa".
	KeyType string
	// RenewBefore renews this long before expiry. Default 0: when a
	// third of the lifetime is left (or earlier per ARI).
	RenewBefore time.Duration
	// HTTPClient talks to the CA; its Timeout bounds every request.
	// Default: a client with a 30s timeout and the system roots.
	HTTPClient *http.Client
	// OrderTimeout bounds one order, from its creation to the
	// certificate. Default 5 minutes.
	OrderTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between failed orders.
	// Defaults 1 minute and 24 hours.
	RetryMin, RetryMax time.Duration
	// Storage keeps the account and the certificates.
	Storage Storage
	// Store serves the certificates and TLS-ALPN-01 challenges.
	Store CertStore
	// Log gets one line per order, issuance and failure. Default discard.
	Log *slog.Logger
	// Observe, when set, is called for every Event (from the name's
	// goroutine; it must not block).
	Observe func(Event)
	// Now and Rand are the clock and the jitter source; defaults
	// time.Now and a random source. Tests set them.
	Now  func() time.Time
	Rand func() float64
}

func (c *Config) withDefaults() Config {
	cp := *c
	if len(cp.Challenges) == 0 {
		cp.Challenges = []string{HTTP01, TLSALPN01}
	}
	if cp.KeyType == "" {
		cp.KeyType = "ecdsa"
	}
	if cp.HTTPClient == nil {
		cp.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cp.OrderTimeout == 0 {
		cp.OrderTimeout = 5 * time.Minute
	}
	if cp.RetryMin == 0 {
		cp.RetryMin = time.Minute
	}
	if cp.RetryMax == 0 {
		cp.RetryMax = 24 * time.Hour
	}
	if cp.Log == nil {
		cp.Log = slog.New(slog.DiscardHandler)
	}
	if cp.Observe == nil {
		cp.Observe = func(Event) {}
	}
	if cp.Now == nil {
		cp.Now = time.Now
	}
	if cp.Rand == nil {
		cp.Rand = rand.Float64
	}
	return cp
}
