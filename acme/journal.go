package acme

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/acme"
)

// The order journal: orders/NAME records the order in progress for NAME
// (its URL, the challenge type, the stage), and orders/NAME.key the key
// of its CSR, written before finalize. Both are written under the name's
// lock and deleted once the certificate is stored. The holder that takes
// the lock after a crash resumes the journaled order instead of placing
// a second one, so a crash costs no extra order against the CA's limits.

// Journal stages.
const (
	stageCreated    = "created"    // the order exists; authorizations may be pending
	stageFinalizing = "finalizing" // the CSR key is stored; finalize may have been sent
)

// journal is orders/NAME.
type journal struct {
	OrderURL  string    `json:"order_url"`
	Challenge string    `json:"challenge,omitempty"`
	Stage     string    `json:"stage"`
	Started   time.Time `json:"started"`
}

func (m *Manager) journalKey(name string) string  { return m.prefix + "/orders/" + name }
func (m *Manager) orderKeyKey(name string) string { return m.prefix + "/orders/" + name + ".key" }

func (m *Manager) writeJournal(ctx context.Context, lk Lock, name string, j journal) error {
	if j.Challenge == "" {
		if old, err := m.readJournal(ctx, name); err == nil && old.OrderURL == j.OrderURL {
			j.Challenge = old.Challenge
		}
	}
	b, err := json.Marshal(j)
	if err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	if err := m.cfg.Storage.PutLocked(ctx, lk, m.journalKey(name), b); err != nil {
		return &Failure{Reason: ReasonStorage, Err: fmt.Errorf("journaling the order: %w", err)}
	}
	return nil
}

func (m *Manager) readJournal(ctx context.Context, name string) (journal, error) {
	var j journal
	b, err := m.cfg.Storage.Get(ctx, m.journalKey(name))
	if err != nil {
		return j, err
	}
	if err := json.Unmarshal(b, &j); err != nil || j.OrderURL == "" {
		return j, fmt.Errorf("%s: not an order journal: %v", m.journalKey(name), err)
	}
	return j, nil
}

// dropJournal deletes name's journal after its certificate is stored; a
// failure leaves a journal that resume finds valid (and fetches the same
// certificate again), never a second order.
func (m *Manager) dropJournal(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, k := range []string{m.journalKey(name), m.orderKeyKey(name)} {
		if err := m.cfg.Storage.Delete(ctx, k); err != nil {
			m.cfg.Log.Warn("acme: order journal not deleted", "name", name, "key", k, "err", err)
		}
	}
}

// resume continues the order journaled for name, if there is one the CA
// still knows and that can still succeed (resumed true). An order the CA
// no longer has or has invalidated is dropped: the caller places a new
// one.
func (m *Manager) resume(ctx context.Context, lk Lock, name string) (c *tls.Certificate, resumed bool, err error) {
	j, err := m.readJournal(ctx, name)
	if errors.Is(err, ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		m.cfg.Log.Warn("acme: unreadable order journal; placing a new order", "name", name, "err", err)
		m.dropJournal(ctx, name)
		return nil, false, nil
	}
	o, err := m.client.GetOrder(ctx, j.OrderURL)
	if err != nil || o.Status == acme.StatusInvalid || o.Status == acme.StatusExpired || o.Status == acme.StatusDeactivated {
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		status := ""
		if o != nil {
			status = o.Status
		}
		m.cfg.Log.Warn("acme: the journaled order cannot be resumed; placing a new order", "name", name,
			"order", j.OrderURL, "status", status, "err", err)
		m.dropJournal(ctx, name)
		return nil, false, nil
	}
	typ := j.Challenge
	if typ == "" {
		typ = m.cfg.Challenges[0]
	}
	m.cfg.Log.Info("acme: resuming the journaled order", "name", name, "order", j.OrderURL, "status", o.Status, "stage", j.Stage)
	m.cfg.Observe(Event{Name: name, Kind: "resume"})
	c, err = m.complete(ctx, lk, name, typ, o)
	return c, true, err
}

// orderKey returns the key of name's CSR: the journaled one, else (when
// create is set) a new one, stored before it is used so that a
// certificate issued for it is never orphaned.
func (m *Manager) orderKey(ctx context.Context, lk Lock, name string, create bool) (crypto.Signer, error) {
	if b, err := m.cfg.Storage.Get(ctx, m.orderKeyKey(name)); err == nil {
		return parseKey(b)
	} else if !errors.Is(err, ErrNotExist) {
		return nil, &Failure{Reason: ReasonStorage, Err: err}
	}
	if !create {
		return nil, &Failure{Reason: ReasonStorage, Err: fmt.Errorf("%s: the key of a finalized order is missing", m.orderKeyKey(name))}
	}
	key, err := newKey(m.cfg.KeyType)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, &Failure{Reason: ReasonStorage, Err: err}
	}
	if err := m.cfg.Storage.PutLocked(ctx, lk, m.orderKeyKey(name), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		return nil, &Failure{Reason: ReasonStorage, Err: err}
	}
	return key, nil
}

func parseKey(b []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, &Failure{Reason: ReasonStorage, Err: errors.New("order key: no PEM block")}
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, &Failure{Reason: ReasonStorage, Err: fmt.Errorf("order key: %w", err)}
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, &Failure{Reason: ReasonStorage, Err: errors.New("order key: not a signing key")}
	}
	return s, nil
}
