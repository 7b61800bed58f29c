package acme

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/edgeway/edgeway/internal/panics"
	"slices"
	"time"

	"golang.org/x/crypto/acme"
)

func (m *Manager) certKey(name string) string { return m.prefix + "/certs/" + name + ".crt" }
func (m *Manager) keyKey(name string) string  { return m.prefix + "/certs/" + name + ".key" }

// loadStored returns the stored certificate of name when it is usable:
// its key matches, it covers name, has the configured key type and has
// not expired. Else nil (and the loop orders one).
func (m *Manager) loadStored(ctx context.Context, name string) *tls.Certificate {
	certPEM, err := m.cfg.Storage.Get(ctx, m.certKey(name))
	if err != nil {
		return nil
	}
	keyPEM, err := m.cfg.Storage.Get(ctx, m.keyKey(name))
	if err != nil {
		return nil
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		m.cfg.Log.Warn("acme: stored certificate unusable; ordering a new one", "name", name, "err", err)
		return nil
	}
	leaf := c.Leaf
	if leaf == nil || leaf.VerifyHostname(name) != nil || !m.cfg.Now().Before(leaf.NotAfter) || keyTypeOf(c.PrivateKey) != m.cfg.KeyType {
		return nil
	}
	return &c
}

func keyTypeOf(k crypto.PrivateKey) string {
	switch k.(type) {
	case *ecdsa.PrivateKey:
		return "ecdsa"
	case *rsa.PrivateKey:
		return "rsa"
	}
	return ""
}

// obtain runs one order for name under the storage lock of the name, and
// serves the result. Another holder of the lock (another instance) may
// have renewed meanwhile: then its certificate is served instead. An
// order journaled by a holder that died is resumed, not placed again.
// The order stops when the lock is lost.
func (m *Manager) obtain(ctx context.Context, name string, l *nameLoop, seen *x509.Certificate) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.OrderTimeout)
	defer cancel()
	started := m.cfg.Now()
	lk, err := m.cfg.Storage.Lock(ctx, m.nameLock(name))
	if err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	defer lk.Unlock()
	ctx, stop := untilLost(ctx, lk)
	defer stop()
	// Another instance stored a fresh certificate since the caller decided
	// to replace seen (while this one waited for the lock). It may be
	// served already (the storage's watch): then there is nothing to do.
	if c := m.loadStored(ctx, name); c != nil && !c.Leaf.Equal(seen) &&
		m.cfg.Now().Before(renewTime(c.Leaf, m.cfg.RenewBefore, 0)) {
		if !c.Leaf.Equal(curLeaf(l)) {
			return m.serve(name, l, c, "loaded", 0)
		}
		return nil
	}
	if err := m.ensureAccount(ctx); err != nil {
		return err
	}
	issued := func(c *tls.Certificate) error {
		if err := m.save(ctx, lk, name, c); err != nil {
			return err
		}
		m.dropJournal(ctx, name)
		return m.serve(name, l, c, "issued", m.cfg.Now().Sub(started))
	}
	if c, resumed, err := m.resume(ctx, lk, name); resumed {
		if err != nil {
			return err
		}
		return issued(c)
	}
	var last error
	for _, typ := range m.cfg.Challenges {
		m.cfg.Log.Info("acme: ordering a certificate", "name", name, "challenge", typ)
		m.cfg.Observe(Event{Name: name, Kind: "order"})
		c, err := m.order(ctx, lk, name, typ)
		if err == nil {
			return issued(c)
		}
		last = err
		// Only a failed challenge is worth another order with the next
		// type; the CA refusing the order or being down is not.
		if f := classify(err); f.Reason != ReasonChallengeFailed || ctx.Err() != nil {
			return err
		}
		m.cfg.Log.Warn("acme: challenge failed; trying the next type", "name", name, "challenge", typ, "err", err)
	}
	return last
}

// nameLock is the lock of name's orders: under names/, so that no name
// (not even one spelled "account") shares the account's lock.
func (m *Manager) nameLock(name string) string { return m.prefix + "/names/" + name }

// untilLost returns ctx, ended too when lk is lost.
func untilLost(ctx context.Context, lk Lock) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer panics.Recover("acme: order lock")
		select {
		case <-lk.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func leafOf(c *tls.Certificate) *x509.Certificate {
	if c == nil {
		return nil
	}
	return c.Leaf
}

func curLeaf(l *nameLoop) *x509.Certificate {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return nil
	}
	return l.cur.Leaf
}

// order creates an order for name, journals it, proves it with
// challenge type typ, and finalizes it with a new key.
func (m *Manager) order(ctx context.Context, lk Lock, name, typ string) (*tls.Certificate, error) {
	o, err := m.client.AuthorizeOrder(ctx, acme.DomainIDs(name))
	if err != nil {
		return nil, fmt.Errorf("creating the order: %w", err)
	}
	if err := m.writeJournal(ctx, lk, name, journal{OrderURL: o.URI, Challenge: typ, Stage: stageCreated, Started: m.cfg.Now()}); err != nil {
		return nil, err
	}
	return m.complete(ctx, lk, name, typ, o)
}

// complete takes order o of name from whatever state it is in to the
// certificate: authorizations still pending are proved with typ, a
// ready order is finalized, a processing one awaited, a valid one's
// certificate fetched.
func (m *Manager) complete(ctx context.Context, lk Lock, name, typ string, o *acme.Order) (*tls.Certificate, error) {
	if o.Status == acme.StatusPending {
		for _, u := range o.AuthzURLs {
			if err := m.authorize(ctx, u, name, typ); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if o.Status != acme.StatusValid {
		if o, err = m.client.WaitOrder(ctx, o.URI); err != nil {
			return nil, fmt.Errorf("waiting for the order: %w", err)
		}
	}
	key, err := m.orderKey(ctx, lk, name, o.Status == acme.StatusReady)
	if err != nil {
		return nil, err
	}
	var der [][]byte
	if o.Status == acme.StatusValid {
		if der, err = m.client.FetchCert(ctx, o.CertURL, true); err != nil {
			return nil, fmt.Errorf("fetching the certificate: %w", err)
		}
	} else {
		if der, err = m.finalize(ctx, lk, name, o, key); err != nil {
			return nil, err
		}
	}
	return certificate(name, der, key)
}

// finalize journals the finalize stage, then sends the CSR of key.
func (m *Manager) finalize(ctx context.Context, lk Lock, name string, o *acme.Order, key crypto.Signer) ([][]byte, error) {
	j := journal{OrderURL: o.URI, Stage: stageFinalizing, Started: m.cfg.Now()}
	if err := m.writeJournal(ctx, lk, name, j); err != nil {
		return nil, err
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: name}, DNSNames: []string{name}}, key)
	if err != nil {
		return nil, fmt.Errorf("making the CSR: %w", err)
	}
	// CreateCertFromOrder waits on the order's own URL: a CA need not
	// repeat it (Location) in its answer to the finalize request, and
	// pebble 2.10 does not.
	der, _, err := m.client.CreateCertFromOrder(ctx, o, csr, true)
	if err != nil {
		return nil, fmt.Errorf("finalizing the order: %w", err)
	}
	return der, nil
}

// certificate checks an issued chain for name and pairs it with key.
func certificate(name string, der [][]byte, key crypto.Signer) (*tls.Certificate, error) {
	if len(der) == 0 {
		return nil, &Failure{Reason: ReasonOrderRejected, Err: errors.New("issued certificate: empty chain")}
	}
	leaf, err := x509.ParseCertificate(der[0])
	if err != nil {
		return nil, &Failure{Reason: ReasonOrderRejected, Err: fmt.Errorf("issued certificate: %w", err)}
	}
	if err := leaf.VerifyHostname(name); err != nil {
		return nil, &Failure{Reason: ReasonOrderRejected, Err: fmt.Errorf("issued certificate: %w", err)}
	}
	c := &tls.Certificate{Certificate: der, PrivateKey: key, Leaf: leaf}
	if !publicKeyMatches(leaf, key) {
		return nil, &Failure{Reason: ReasonOrderRejected, Err: errors.New("issued certificate: its key is not the order's key")}
	}
	return c, nil
}

func publicKeyMatches(leaf *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(leaf.PublicKey)
}

// authorize proves control of name for one authorization with the
// challenge of type typ, answered until the CA decides. A challenge
// already accepted (by a holder that died) is presented again, not
// accepted twice.
func (m *Manager) authorize(ctx context.Context, u, name, typ string) error {
	z, err := m.client.GetAuthorization(ctx, u)
	if err != nil {
		return fmt.Errorf("fetching the authorization: %w", err)
	}
	if z.Status == acme.StatusValid {
		return nil
	}
	i := slices.IndexFunc(z.Challenges, func(c *acme.Challenge) bool { return c.Type == typ })
	if i < 0 {
		return &Failure{Reason: ReasonChallengeFailed, Err: fmt.Errorf("the CA does not offer %s for %s", typ, name)}
	}
	chal := z.Challenges[i]
	cleanup, err := m.present(ctx, name, typ, chal.Token)
	if err != nil {
		return err
	}
	defer cleanup()
	if chal.Status == acme.StatusPending {
		if _, err := m.client.Accept(ctx, chal); err != nil {
			return fmt.Errorf("accepting the %s challenge: %w", typ, err)
		}
	}
	if _, err := m.client.WaitAuthorization(ctx, z.URI); err != nil {
		return fmt.Errorf("%s challenge: %w", typ, err)
	}
	return nil
}

// save stores the key, then the certificate: an interruption between the
// two leaves a certificate whose key does not match, which loadStored
// ignores.
func (m *Manager) save(ctx context.Context, lk Lock, name string, c *tls.Certificate) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	var chain []byte
	for _, der := range c.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	// The context may be ending (shutdown): finish writing what was paid
	// for, each file on its own short deadline.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.cfg.Storage.PutLocked(wctx, lk, m.keyKey(name), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})); err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	if err := m.cfg.Storage.PutLocked(wctx, lk, m.certKey(name), chain); err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	return nil
}

func newKey(typ string) (crypto.Signer, error) {
	if typ == "rsa" {
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}
