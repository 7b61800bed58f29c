package jwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

var enc = base64.RawURLEncoding

// TestKeys holds one key of each type and their JWKS.
type TestKeys struct {
	RSA  *rsa.PrivateKey
	EC   *ecdsa.PrivateKey
	Ed   ed25519.PrivateKey
	JWKS []byte
}

func newTestKeys(t testing.TB) *TestKeys {
	t.Helper()
	r, _ := rsa.GenerateKey(rand.Reader, 2048)
	e, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	pad := func(b []byte) []byte { return append(make([]byte, 32-len(b)), b...) }
	doc := fmt.Sprintf(`{"keys":[
		{"kty":"RSA","kid":"r1","alg":"RS256","use":"sig","n":%q,"e":%q},
		{"kty":"EC","kid":"e1","crv":"P-256","x":%q,"y":%q},
		{"kty":"OKP","kid":"d1","crv":"Ed25519","x":%q}]}`,
		enc.EncodeToString(r.N.Bytes()), enc.EncodeToString([]byte{1, 0, 1}),
		enc.EncodeToString(pad(e.X.Bytes())), enc.EncodeToString(pad(e.Y.Bytes())),
		enc.EncodeToString(ed.Public().(ed25519.PublicKey)))
	return &TestKeys{RSA: r, EC: e, Ed: ed, JWKS: []byte(doc)}
}

// sign makes a compact token with alg and kid over claims.
func (k *TestKeys) sign(t testing.TB, alg, kid string, claims map[string]any) string {
	t.Helper()
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	p, _ := json.Marshal(claims)
	signed := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	sum := sha256.Sum256([]byte(signed))
	var sig []byte
	switch alg {
	case "RS256":
		sig, _ = rsa.SignPKCS1v15(rand.Reader, k.RSA, crypto.SHA256, sum[:])
	case "ES256":
		r, s, _ := ecdsa.Sign(rand.Reader, k.EC, sum[:])
		sig = append(append(make([]byte, 0, 64), r.FillBytes(make([]byte, 32))...), s.FillBytes(make([]byte, 32))...)
	case "EdDSA":
		sig = ed25519.Sign(k.Ed, []byte(signed))
	default:
		sig = []byte("x")
	}
	return signed + "." + enc.EncodeToString(sig)
}

func TestVerify(t *testing.T) {
	t.Parallel()
	k := newTestKeys(t)
	ks, err := ParseKeySet(k.JWKS)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	good := map[string]any{"sub": "alice", "iss": "https://id.test", "aud": []string{"api", "web"}, "exp": now.Unix() + 60}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for a, b := range good {
			c[a] = b
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	for _, c := range []struct {
		desc, alg, kid string
		claims         map[string]any
		tamper         bool
		err            string
	}{
		{"RS256", "RS256", "r1", good, false, ""},
		{"ES256", "ES256", "e1", good, false, ""},
		{"EdDSA", "EdDSA", "d1", good, false, ""},
		{"expired", "ES256", "e1", with("exp", now.Unix()-31), false, "expired"},
		{"within leeway", "ES256", "e1", with("exp", now.Unix()-29), false, ""},
		{"no exp", "ES256", "e1", with("exp", nil), false, "no exp claim"},
		{"not yet", "ES256", "e1", with("nbf", now.Unix()+60), false, "not valid yet"},
		{"other issuer", "ES256", "e1", with("iss", "https://evil.test"), false, "issuer"},
		{"other audience", "ES256", "e1", with("aud", "billing"), false, "audience not accepted"},
		{"string audience", "ES256", "e1", with("aud", "api"), false, ""},
		{"tampered", "ES256", "e1", good, true, "bad signature"},
		{"alg mismatch", "RS256", "e1", good, false, `alg "RS256" for a ES256 key`},
		{"none", "none", "r1", good, false, `alg "none"`},
		{"HMAC", "HS256", "r1", good, false, `alg "HS256"`},
		{"unknown kid", "ES256", "zz", good, false, `no key "zz"`},
	} {
		tok := k.sign(t, c.alg, c.kid, c.claims)
		if c.tamper {
			parts := strings.Split(tok, ".")
			p, _ := json.Marshal(with("sub", "root"))
			tok = parts[0] + "." + enc.EncodeToString(p) + "." + parts[2]
		}
		claims, err := ks.Verify(tok, now, 30*time.Second, "https://id.test", "api")
		switch {
		case c.err == "" && (err != nil || claims.String("sub") != "alice"):
			t.Errorf("%s: %v, sub %q", c.desc, err, claims.String("sub"))
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want %q", c.desc, err, c.err)
		}
	}
}

func TestParseKeySetRefuses(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string]string{
		`{}`:       "no keys",
		`not json`: "not a JWKS document",
		`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`:                         `key type "oct"`,
		`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`:                  "at least 2048 bits",
		`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA","use":"enc"}]}`: `use "enc"`,
	} {
		if _, err := ParseKeySet([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeySet(%s) = %v, want %q", doc, err, want)
		}
	}
}

func FuzzVerify(f *testing.F) {
	k := newTestKeys(f)
	ks, _ := ParseKeySet(k.JWKS)
	f.Add(k.sign(f, "EdDSA", "d1", map[string]any{"exp": 9e9}))
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := ks.Verify(tok, time.Unix(0, 0), 0, "", "")
		if err == nil && c == nil {
			t.Fatal("no error and no claims")
		}
	})
}
