package testutil

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// JWTKey is an Ed25519 signing key with a kid, for tests of jwt
// verification: its JWK for a key set, and tokens it signs.
type JWTKey struct {
	Kid  string
	priv ed25519.PrivateKey
}

var b64url = base64.RawURLEncoding

// NewJWTKey makes a fresh key named kid.
func NewJWTKey(kid string) *JWTKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return &JWTKey{Kid: kid, priv: priv}
}

// JWK returns the public key as a JWKS entry.
func (k *JWTKey) JWK() string {
	return fmt.Sprintf(`{"kty":"OKP","crv":"Ed25519","use":"sig","kid":%q,"x":%q}`,
		k.Kid, b64url.EncodeToString(k.priv.Public().(ed25519.PublicKey)))
}

// JWKS returns a key set document holding keys' public keys.
func JWKS(keys ...*JWTKey) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.JWK()
	}
	return `{"keys":[` + strings.Join(parts, ",") + `]}`
}

// Sign returns a compact EdDSA token over claims naming the key's kid.
func (k *JWTKey) Sign(claims map[string]any) string {
	return k.SignAs(k.Kid, claims)
}

// SignAs is Sign with the header naming kid instead (a forged or
// unknown key id).
func (k *JWTKey) SignAs(kid string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "EdDSA", "kid": kid, "typ": "JWT"})
	p, _ := json.Marshal(claims)
	s := b64url.EncodeToString(h) + "." + b64url.EncodeToString(p)
	return s + "." + b64url.EncodeToString(ed25519.Sign(k.priv, []byte(s)))
}
