package router

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	etest "github.com/edgeway/edgeway/internal/testutil"
)

// TestJWKSPrivateCA: a jwks URL served over TLS by a certificate of a
// private CA is trusted with jwks_ca (tokens pass) and refused without it
// (the set never loads: 503, and the failed fetches are counted).
func TestJWKSPrivateCA(t *testing.T) {
	t.Parallel()
	k := etest.NewJWTKey("k1")
	idp := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		io.WriteString(w, etest.JWKS(k))
	}))
	t.Cleanup(idp.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: idp.Certificate().Raw})
	token := "Bearer " + k.Sign(map[string]any{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	for _, c := range []struct {
		desc   string
		ca     []byte
		status int
	}{
		{"with the CA", ca, 200},
		{"without the CA", nil, 503},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			up := backend(t, "a")
			r := testRoute(t, "api", "PathPrefix(`/`)", "u")
			r.JWTPolicy = "idp"
			cfg := &conf.Config{
				Listeners: []conf.Listener{testListener()},
				Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
				JWTs: []conf.JWT{{Name: "idp", JWKSURL: idp.URL + "/jwks.json", JWKSRefresh: time.Minute,
					JWKSCA: c.ca, Leeway: time.Second}},
				Routes: []conf.Route{r},
			}
			rt, fe := front(t, cfg, Options{})
			p := rt.snap.Load().jwts["idp"]
			// Wait for the first fetch to end, well or badly.
			etest.Eventually(t, 20*time.Second, func() bool {
				ok, failed := p.remote.Stats()
				return ok+failed > 0
			}, "no jwks fetch ended")
			resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/x", "Authorization", token))
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if ok, failed := p.remote.Stats(); (c.ca != nil) != (ok > 0 && failed == 0) {
				t.Errorf("fetches ok %d, failed %d", ok, failed)
			}
		})
	}
}
