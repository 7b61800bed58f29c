package router

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// TestJWT: a route with jwt answers 401 without a valid bearer token;
// with one, the upstream gets the token's claims in the configured
// fields, never a client's own copies.
func TestJWT(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	enc := base64.RawURLEncoding
	jwks := fmt.Sprintf(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":%q}]}`, enc.EncodeToString(pub))
	token := func(claims map[string]any) string {
		h, _ := json.Marshal(map[string]string{"alg": "EdDSA", "kid": "k1"})
		p, _ := json.Marshal(claims)
		s := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
		return s + "." + enc.EncodeToString(ed25519.Sign(priv, []byte(s)))
	}
	up := backend(t, "a")
	r := testRoute(t, "api", "PathPrefix(`/`)", "u")
	r.JWT = &conf.JWT{JWKS: []byte(jwks), Audience: "api", Leeway: time.Second, ClaimHeaders: [][2]string{{"sub", "X-User"}}}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
	}
	_, fe := front(t, cfg, Options{})
	good := token(map[string]any{"sub": "alice", "aud": "api", "exp": time.Now().Add(time.Hour).Unix()})
	for _, c := range []struct {
		desc, auth string
		status     int
		user       string
	}{
		{"no token", "", 401, ""},
		{"garbage", "Bearer a.b.c", 401, ""},
		{"expired", "Bearer " + token(map[string]any{"sub": "alice", "aud": "api", "exp": time.Now().Add(-time.Hour).Unix()}), 401, ""},
		{"other audience", "Bearer " + token(map[string]any{"sub": "alice", "aud": "web", "exp": time.Now().Add(time.Hour).Unix()}), 401, ""},
		{"valid", "Bearer " + good, 200, "alice"},
		{"valid again (cached)", "Bearer " + good, 200, "alice"},
	} {
		resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/x", "Authorization", c.auth, "X-User", "root"))
		if resp.StatusCode != c.status || resp.Header.Get("X-Got-X-User") != c.user {
			t.Errorf("%s: %d, upstream saw X-User %q; want %d %q", c.desc, resp.StatusCode, resp.Header.Get("X-Got-X-User"), c.status, c.user)
		}
		if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", c.desc)
		}
	}
}
