// Package jwt verifies JSON Web Tokens (RFC 7519) in compact form against
// a JSON Web Key Set (RFC 7517): RS256, ES256 and EdDSA signatures only
// (no "none", no shared-secret HMAC), with exp, nbf, iss and aud checked.
package jwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// KeySet is a parsed JWKS: the keys by kid, in file order.
type KeySet struct {
	keys []key
}

type key struct {
	kid string
	alg string // the algorithm the key verifies: RS256, ES256, EdDSA
	pub crypto.PublicKey
}

type jwk struct {
	Kty, Kid, Alg, Use, Crv string
	N, E, X, Y              string
}

// ParseKeySet reads a JWKS document ({"keys": [...]}). Keys of other
// types, and those marked for encryption ("use": "enc"), are refused.
func ParseKeySet(data []byte) (*KeySet, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a JWKS document: %v", err)
	}
	if len(doc.Keys) == 0 {
		return nil, errors.New("no keys")
	}
	ks := &KeySet{}
	for i, k := range doc.Keys {
		if k.Use != "" && k.Use != "sig" {
			return nil, fmt.Errorf("key %d (%q): use %q, want sig", i, k.Kid, k.Use)
		}
		pub, alg, err := k.public()
		if err != nil {
			return nil, fmt.Errorf("key %d (%q): %v", i, k.Kid, err)
		}
		if k.Alg != "" && k.Alg != alg {
			return nil, fmt.Errorf("key %d (%q): alg %q does not fit a %s key", i, k.Kid, k.Alg, k.Kty)
		}
		ks.keys = append(ks.keys, key{kid: k.Kid, alg: alg, pub: pub})
	}
	return ks, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func (k jwk) public() (crypto.PublicKey, string, error) {
	switch k.Kty {
	case "RSA":
		n, err1 := b64(k.N)
		e, err2 := b64(k.E)
		if err1 != nil || err2 != nil || len(n) < 256 || len(e) == 0 || len(e) > 4 {
			return nil, "", errors.New("invalid RSA key (n and e base64url; at least 2048 bits)")
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, "RS256", nil
	case "EC":
		x, err1 := b64(k.X)
		y, err2 := b64(k.Y)
		if k.Crv != "P-256" || err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil, "", errors.New("invalid EC key (P-256 with 32-byte x and y)")
		}
		pub := &ecdsa.PublicKey{Curve: elliptic.P256(), X: new(big.Int).SetBytes(x), Y: new(big.Int).SetBytes(y)}
		if !pub.Curve.IsOnCurve(pub.X, pub.Y) {
			return nil, "", errors.New("EC point not on P-256")
		}
		return pub, "ES256", nil
	case "OKP":
		x, err := b64(k.X)
		if k.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return nil, "", errors.New("invalid OKP key (Ed25519 with a 32-byte x)")
		}
		return ed25519.PublicKey(x), "EdDSA", nil
	}
	return nil, "", fmt.Errorf("key type %q (expected RSA, EC or OKP)", k.Kty)
}

// Claims are a verified token's claims.
type Claims map[string]any

// String returns claim name as a string ("" when absent or not one).
func (c Claims) String(name string) string {
	s, _ := c[name].(string)
	return s
}

// Verify checks token's signature with the key its header names (kid, or
// the set's only key) and its claims at now: exp and nbf within leeway,
// iss equal to issuer and aud holding audience when they are not "".
func (ks *KeySet) Verify(token string, now time.Time, leeway time.Duration, issuer, audience string) (Claims, error) {
	h64, rest, ok1 := strings.Cut(token, ".")
	p64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return nil, errors.New("not a compact JWS (three parts)")
	}
	hb, err := b64(h64)
	if err != nil {
		return nil, errors.New("bad header encoding")
	}
	var hdr struct{ Alg, Kid, Crit string }
	if json.Unmarshal(hb, &hdr) != nil {
		return nil, errors.New("bad header")
	}
	k, err := ks.find(hdr.Kid, hdr.Alg)
	if err != nil {
		return nil, err
	}
	sig, err := b64(s64)
	if err != nil {
		return nil, errors.New("bad signature encoding")
	}
	signed := token[:len(h64)+1+len(p64)]
	if !verify(k, signed, sig) {
		return nil, errors.New("bad signature")
	}
	pb, err := b64(p64)
	if err != nil {
		return nil, errors.New("bad payload encoding")
	}
	var c Claims
	if json.Unmarshal(pb, &c) != nil {
		return nil, errors.New("bad claims")
	}
	return c, c.check(now, leeway, issuer, audience)
}

func (ks *KeySet) find(kid, alg string) (key, error) {
	for _, k := range ks.keys {
		if (kid == "" && len(ks.keys) == 1) || (kid != "" && k.kid == kid) {
			if k.alg != alg {
				return key{}, fmt.Errorf("alg %q for a %s key", alg, k.alg)
			}
			return k, nil
		}
	}
	return key{}, fmt.Errorf("%w %q", ErrUnknownKey, kid)
}

// ErrUnknownKey is Verify's error for a token whose key (kid) the set
// does not hold: a key set kept from a URL may be out of date.
var ErrUnknownKey = errors.New("no key")

func verify(k key, signed string, sig []byte) bool {
	sum := sha256.Sum256([]byte(signed))
	switch pub := k.pub.(type) {
	case *rsa.PublicKey:
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil
	case *ecdsa.PublicKey:
		if len(sig) != 64 {
			return false
		}
		return ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	case ed25519.PublicKey:
		return ed25519.Verify(pub, []byte(signed), sig)
	}
	return false
}

func (c Claims) check(now time.Time, leeway time.Duration, issuer, audience string) error {
	t := float64(now.Unix())
	l := leeway.Seconds()
	exp, ok := c["exp"].(float64)
	if !ok {
		return errors.New("no exp claim")
	}
	if t > exp+l {
		return errors.New("expired")
	}
	if nbf, ok := c["nbf"].(float64); ok && t < nbf-l {
		return errors.New("not valid yet")
	}
	if issuer != "" && c.String("iss") != issuer {
		return fmt.Errorf("issuer %q", c.String("iss"))
	}
	if audience != "" && !c.hasAudience(audience) {
		return errors.New("audience not accepted")
	}
	return nil
}

func (c Claims) hasAudience(aud string) bool {
	switch v := c["aud"].(type) {
	case string:
		return v == aud
	case []any:
		for _, a := range v {
			if s, _ := a.(string); s == aud {
				return true
			}
		}
	}
	return false
}
