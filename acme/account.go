package acme

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	"golang.org/x/crypto/acme"
)

// accountState is account.json: the account URL the CA gave.
type accountState struct {
	URI string `json:"uri"`
}

// ensureAccount loads the account key (making and storing an ECDSA P-256
// one the first time) and registers it once; the account URL is stored so
// that later starts do not register again.
func (m *Manager) ensureAccount(ctx context.Context) error {
	m.acctMu.Lock()
	defer m.acctMu.Unlock()
	if m.acctReady {
		return nil
	}
	lk, err := m.cfg.Storage.Lock(ctx, m.prefix+"/account")
	if err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	defer lk.Unlock()
	key, err := m.accountKey(ctx, lk)
	if err != nil {
		return err
	}
	m.client.Key = key
	var st accountState
	if b, err := m.cfg.Storage.Get(ctx, m.prefix+"/account.json"); err == nil && json.Unmarshal(b, &st) == nil && st.URI != "" {
		m.client.KID = acme.KeyID(st.URI)
		m.acctReady = true
		return nil
	}
	uri, err := m.register(ctx)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(accountState{URI: uri})
	if err := m.cfg.Storage.PutLocked(ctx, lk, m.prefix+"/account.json", b); err != nil {
		return &Failure{Reason: ReasonStorage, Err: err}
	}
	m.client.KID = acme.KeyID(uri)
	m.acctReady = true
	m.cfg.Log.Info("acme: account registered", "directory", m.cfg.Directory, "account", uri)
	return nil
}

func (m *Manager) accountKey(ctx context.Context, lk Lock) (*ecdsa.PrivateKey, error) {
	k := m.prefix + "/account.key"
	b, err := m.cfg.Storage.Get(ctx, k)
	if err == nil {
		blk, _ := pem.Decode(b)
		if blk == nil {
			return nil, &Failure{Reason: ReasonStorage, Err: fmt.Errorf("%s: no PEM block", k)}
		}
		key, err := x509.ParseECPrivateKey(blk.Bytes)
		if err != nil {
			return nil, &Failure{Reason: ReasonStorage, Err: fmt.Errorf("%s: %w", k, err)}
		}
		return key, nil
	}
	if !errors.Is(err, ErrNotExist) {
		return nil, &Failure{Reason: ReasonStorage, Err: err}
	}
	signer, err := newKey("ecdsa")
	if err != nil {
		return nil, err
	}
	key := signer.(*ecdsa.PrivateKey)
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := m.cfg.Storage.PutLocked(ctx, lk, k, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
		return nil, &Failure{Reason: ReasonStorage, Err: err}
	}
	return key, nil
}

// register creates the account (or finds the one of this key) and
// returns its URL.
func (m *Manager) register(ctx context.Context) (string, error) {
	a := &acme.Account{}
	if m.cfg.Email != "" {
		a.Contact = []string{"mailto:" + m.cfg.Email}
	}
	if m.cfg.EABKeyID != "" {
		hmac, err := base64.RawURLEncoding.DecodeString(m.cfg.EABHMAC)
		if err != nil {
			return "", &Failure{Reason: ReasonOther, Err: fmt.Errorf("eab: HMAC is not base64url: %w", err)}
		}
		a.ExternalAccountBinding = &acme.ExternalAccountBinding{KID: m.cfg.EABKeyID, Key: hmac}
	}
	got, err := m.client.Register(ctx, a, acme.AcceptTOS)
	if errors.Is(err, acme.ErrAccountAlreadyExists) {
		got, err = m.client.GetReg(ctx, "")
	}
	if err != nil {
		return "", fmt.Errorf("registering the account: %w", err)
	}
	return got.URI, nil
}
