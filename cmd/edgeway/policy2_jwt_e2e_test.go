package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestP2JWTClaimRoutes: from configuration text, a named `jwt` policy
// and JWTClaim rules route a valid token by its claim, over HTTP/1.1 and
// HTTP/3; an expired token or a foreign key's never matches, so the
// fallback answers.
func TestP2JWTClaimRoutes(t *testing.T) {
	key, foreign := testutil.NewJWTKey("k1"), testutil.NewJWTKey("k1")
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(testutil.JWKS(key)), 0o644); err != nil {
		t.Fatal(err)
	}
	ca := testutil.NewCA(t, "jwt claim CA")
	routes := fmt.Sprintf("jwt idp {\n  jwks %s\n  audience api\n  claim_header sub X-User\n}\n"+
		"route admin {\n  match PathPrefix(`/`) && JWTClaim(`idp`, `role`, `admin`)\n  jwt_policy idp\n  respond 200 \"admin\"\n}\n"+
		"route fallback {\n  match PathPrefix(`/`)\n  priority 1\n  respond 200 \"fallback\"\n}\n", keys)
	p, base := p2H3Site(t, ca, "", routes)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test"}}
	defer tr.Close()
	h1 := tlsClient(false, &tls.Config{RootCAs: roots, ServerName: "site.test"})
	h1URL := "https://" + p.Addrs(t, 2)["websecure"] + "/"
	claims := func(role string, exp time.Duration) map[string]any {
		return map[string]any{"sub": "alice", "role": role, "aud": "api", "exp": time.Now().Add(exp).Unix()}
	}
	for _, c := range []struct {
		desc, token, want string
	}{
		{"an admin token", key.Sign(claims("admin", time.Hour)), "admin"},
		{"a user token", key.Sign(claims("user", time.Hour)), "fallback"},
		{"an expired admin token", key.Sign(claims("admin", -time.Hour)), "fallback"},
		{"a foreign key's admin token", foreign.Sign(claims("admin", time.Hour)), "fallback"},
		{"no token", "", "fallback"},
	} {
		auth := ""
		if c.token != "" {
			auth = "Bearer " + c.token
		}
		if _, body := p2H3Request(t, tr, base+"/", "Authorization", auth); string(body) != c.want {
			t.Errorf("%s over HTTP/3: answered %q, want %q", c.desc, body, c.want)
		}
		req, _ := http.NewRequest("GET", h1URL, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := h1.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(body) != c.want {
			t.Errorf("%s over HTTP/1.1: answered %q, want %q", c.desc, body, c.want)
		}
	}
}
