package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Challenges are published through Storage before they are accepted, so
// that any instance sharing the storage answers the CA's validation,
// whichever instance the load balancer sends it to: HTTP01 and the
// TLS-ALPN-01 lookup look in memory first, then in storage.

// lookupTimeout bounds one storage read for a challenge the memory of
// this instance does not hold.
const lookupTimeout = 2 * time.Second

// Storage lookups for challenges come from unauthenticated requests, so
// they are bounded: at most lookupRate a second per instance, and a key
// found missing is not read again for lookupNegative (a CA retries
// seconds apart, a flood of made-up tokens meets the cache or the cap).
const (
	lookupRate     = 20
	lookupNegative = 2 * time.Second
	lookupMissMax  = 1024
)

// lookupGate enforces those bounds.
type lookupGate struct {
	mu      sync.Mutex
	window  time.Time // start of the current second
	used    int
	missing map[string]time.Time // key -> when it was found missing
}

// allow reports whether key may be read from storage now.
func (g *lookupGate) allow(key string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if at, ok := g.missing[key]; ok && now.Sub(at) < lookupNegative {
		return false
	}
	if now.Sub(g.window) >= time.Second {
		g.window, g.used = now, 0
	}
	if g.used >= lookupRate {
		return false
	}
	g.used++
	return true
}

// miss records key as missing.
func (g *lookupGate) miss(key string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.missing == nil || len(g.missing) >= lookupMissMax {
		g.missing = make(map[string]time.Time)
	}
	g.missing[key] = now
}

// lookup reads a challenge record another instance published, within
// the gate's bounds; nil when there is none (or it may not be read now).
// negative caches a miss: right for HTTP-01 tokens, which nobody can
// guess before they are published, wrong for TLS-ALPN-01 names, which
// anyone could keep "missing" by asking every second.
func (m *Manager) lookup(key string, negative bool) []byte {
	now := time.Now()
	if !m.gate.allow(key, now) {
		return nil
	}
	ctx, cancel := context.WithTimeout(m.ctx, lookupTimeout)
	defer cancel()
	b, err := m.cfg.Storage.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, ErrNotExist) {
			m.cfg.Log.Warn("acme: challenge lookup failed", "key", key, "err", err)
		}
		if negative {
			m.gate.miss(key, now)
		}
		return nil
	}
	return b
}

func (m *Manager) http01Key(token string) string { return m.prefix + "/challenges/http-01/" + token }
func (m *Manager) alpnKey(name string) string    { return m.prefix + "/challenges/tls-alpn-01/" + name }

// present makes this instance's listeners answer the challenge, and
// publishes it through storage for the others, until cleanup.
func (m *Manager) present(ctx context.Context, name, typ, token string) (cleanup func(), err error) {
	var key string
	var value []byte
	var local func()
	switch typ {
	case HTTP01:
		ka, err := m.client.HTTP01ChallengeResponse(token)
		if err != nil {
			return nil, err
		}
		m.tokMu.Lock()
		m.tokens[token] = ka
		m.tokMu.Unlock()
		key, value = m.http01Key(token), []byte(ka)
		local = func() {
			m.tokMu.Lock()
			delete(m.tokens, token)
			m.tokMu.Unlock()
		}
	case TLSALPN01:
		c, err := m.client.TLSALPN01ChallengeCert(token, name)
		if err != nil {
			return nil, err
		}
		if value, err = certPEM(&c); err != nil {
			return nil, err
		}
		m.cfg.Store.SetChallenge(name, &c)
		key = m.alpnKey(name)
		local = func() { m.cfg.Store.SetChallenge(name, nil) }
	default:
		return nil, fmt.Errorf("acme: unknown challenge type %q", typ)
	}
	if err := m.publish(ctx, key, value); err != nil {
		local()
		return nil, &Failure{Reason: ReasonStorage, Err: fmt.Errorf("publishing the %s challenge: %w", typ, err)}
	}
	return func() {
		local()
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		if err := m.cfg.Storage.Delete(dctx, key); err != nil {
			m.cfg.Log.Warn("acme: challenge record not deleted", "key", key, "err", err)
		}
	}, nil
}

// publish stores a challenge record: with a TTL of OrderTimeout where the
// storage can expire values, so a crashed holder's record goes by itself.
func (m *Manager) publish(ctx context.Context, key string, value []byte) error {
	if e, ok := m.cfg.Storage.(Ephemeral); ok {
		return e.PutEphemeral(ctx, key, value, m.cfg.OrderTimeout)
	}
	return m.cfg.Storage.Put(ctx, key, value)
}

// HTTP01 returns the key authorization for an HTTP-01 token of an order
// in progress, for `GET /.well-known/acme-challenge/TOKEN`: this
// instance's, else one another instance published through storage.
func (m *Manager) HTTP01(token string) (string, bool) {
	m.tokMu.Lock()
	ka, ok := m.tokens[token]
	m.tokMu.Unlock()
	if ok || !validToken(token) {
		return ka, ok
	}
	b := m.lookup(m.http01Key(token), true)
	return string(b), b != nil
}

// TLSALPN01 returns the TLS-ALPN-01 certificate another instance
// published for name, or nil. The store calls it when it holds none.
func (m *Manager) TLSALPN01(name string) *tls.Certificate {
	if !validName(name) {
		return nil
	}
	b := m.lookup(m.alpnKey(name), false)
	if b == nil {
		return nil
	}
	c, err := tls.X509KeyPair(b, b)
	if err != nil {
		m.cfg.Log.Warn("acme: stored TLS-ALPN-01 certificate unusable", "name", name, "err", err)
		return nil
	}
	return &c
}

// validToken: RFC 8555 tokens are base64url; anything else is never
// looked up in storage (it would be a storage key of the client's
// choosing).
func validToken(t string) bool {
	if t == "" || len(t) > 128 {
		return false
	}
	for _, r := range t {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// validName accepts a DNS name's characters only, for the same reason.
func validName(n string) bool {
	if n == "" || len(n) > 253 || n[0] == '.' {
		return false
	}
	for i, r := range n {
		if !(r == '-' || r == '.' && n[i-1] != '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// certPEM encodes a certificate and its key as one PEM value.
func certPEM(c *tls.Certificate) ([]byte, error) {
	var out []byte
	for _, der := range c.Certificate {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, err
	}
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})...), nil
}
