package conf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

const jwtTestKeys = `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`

// jwtTestCA is a self-signed CA certificate in PEM.
func jwtTestCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestNamedJWT: a main-level `jwt NAME { ... }` policy is kept by name,
// routes refer to it with jwt_policy and rules with JWTClaim; unknown
// names, a route with both forms and a duplicate name are refused at
// their line and column.
func TestNamedJWT(t *testing.T) {
	t.Parallel()
	const head = "listen web { addr :80 }\nupstream u { server a:1 }\njwt idp { jwks keys.json; audience api }\n"
	for _, c := range []struct {
		desc, src, err string
	}{
		{desc: "policy, jwt_policy and JWTClaim", src: "route r {\n  match Path(`/`) && JWTClaim(`idp`, `role`, `admin`)\n  jwt_policy idp\n  to u\n}\n"},
		{desc: "JWTClaim of an unknown policy", src: "route r {\n  match Path(`/`) && JWTClaim(`corp`, `role`, `admin`)\n  to u\n}\n",
			err: `main.conf:5:31: unknown jwt policy "corp" (defined: idp)`},
		{desc: "jwt_policy unknown", src: "route r {\n  match Path(`/`)\n  jwt_policy corp\n  to u\n}\n",
			err: `main.conf:6:14: unknown jwt policy "corp" (defined: idp)`},
		{desc: "both jwt forms", src: "route r {\n  match Path(`/`)\n  jwt_policy idp\n  jwt { jwks keys.json }\n  to u\n}\n",
			err: "main.conf:7:3: route \"r\" has both `jwt_policy` and a `jwt` block"},
		{desc: "duplicate policy", src: "jwt idp { jwks keys.json }\nroute r { match Path(`/`); to u }\n",
			err: `main.conf:4:5: `},
		{desc: "policy without jwks", src: "jwt other { audience x }\nroute r { match Path(`/`); to u }\n",
			err: "jwt block has no jwks"},
	} {
		cfg, err := loadString(t, head+c.src, "keys.json", jwtTestKeys)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.desc, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.desc, err)
			continue
		}
		if len(cfg.JWTs) != 1 || cfg.JWTs[0].Name != "idp" || cfg.JWTs[0].Audience != "api" || string(cfg.JWTs[0].JWKS) != jwtTestKeys {
			t.Errorf("%s: policies %+v", c.desc, cfg.JWTs)
		}
		if r := cfg.Routes[0]; r.JWTPolicy != "idp" || r.JWT != nil {
			t.Errorf("%s: route policy %q, block %v", c.desc, r.JWTPolicy, r.JWT)
		}
	}
}

// TestJWKSCA: jwks_ca reads a CA for an https jwks URL; a file without a
// certificate, an http URL or a key set file with a CA are refused.
func TestJWKSCA(t *testing.T) {
	t.Parallel()
	const tmpl = "listen web { addr :80 }\nupstream u { server a:1 }\njwt idp { %s }\nroute r { match Path(`/`); jwt_policy idp; to u }\n"
	ca := jwtTestCA(t)
	for _, c := range []struct {
		desc, block, err string
	}{
		{desc: "https URL with a CA", block: "jwks https://id.test/keys; jwks_ca ca.pem"},
		{desc: "not a certificate", block: "jwks https://id.test/keys; jwks_ca keys.json", err: "main.conf:3:46: jwks_ca: keys.json holds no PEM certificate"},
		{desc: "missing file", block: "jwks https://id.test/keys; jwks_ca none.pem", err: "main.conf:3:46: jwks_ca: "},
		{desc: "http URL", block: "jwks http://id.test/keys; jwks_ca ca.pem", err: "main.conf:3:37: jwks_ca: the jwks URL http://id.test/keys is not https"},
		{desc: "a key set file", block: "jwks keys.json; jwks_ca ca.pem", err: "main.conf:3:27: jwks_ca: only an https jwks URL"},
	} {
		cfg, err := loadString(t, fmt.Sprintf(tmpl, c.block), "keys.json", jwtTestKeys, "ca.pem", ca)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.desc, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.desc, err)
			continue
		}
		if j := cfg.JWTs[0]; string(j.JWKSCA) != ca || j.JWKSCAFile != "ca.pem" {
			t.Errorf("%s: CA %q from %q", c.desc, j.JWKSCA, j.JWKSCAFile)
		}
	}
}

// TestUnusedJWT: a named policy nothing refers to is warned about at its
// line, and the configuration still loads.
func TestUnusedJWT(t *testing.T) {
	t.Parallel()
	src := "listen web { addr :80 }\nupstream u { server a:1 }\njwt idp { jwks keys.json }\nroute r { match Path(`/`); to u }\n"
	cfg, err := loadString(t, src, "keys.json", jwtTestKeys)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range cfg.Warnings {
		if w.Pos.Line == 3 && strings.Contains(w.Msg, `jwt policy "idp" is not used`) {
			found = true
		}
	}
	if !found {
		t.Errorf("warnings %+v, want one for the unused policy at line 3", cfg.Warnings)
	}
}
