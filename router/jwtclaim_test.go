package router

import (
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	etest "github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/routes/rule"
)

// jwtClaimConfig: a named policy "idp" (audience api); route admin for
// role admin and route ops for group ops, both behind jwt_policy idp; a
// fallback route for every other request.
func jwtClaimConfig(t *testing.T, k *etest.JWTKey) *conf.Config {
	t.Helper()
	a, b, c := backend(t, "admin"), backend(t, "ops"), backend(t, "fallback")
	admin := testRoute(t, "admin", "PathPrefix(`/`) && JWTClaim(`idp`, `role`, `admin`)", "a")
	admin.JWTPolicy = "idp"
	ops := testRoute(t, "ops", "PathPrefix(`/`) && JWTClaim(`idp`, `groups`, `ops`)", "b")
	ops.JWTPolicy = "idp"
	return &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(a)}), testUpstream("b", []string{addr(b)}),
			testUpstream("c", []string{addr(c)})},
		JWTs: []conf.JWT{{Name: "idp", JWKS: []byte(etest.JWKS(k)), Audience: "api", Leeway: time.Second,
			ClaimHeaders: [][2]string{{"sub", "X-User"}}}},
		Routes: []conf.Route{admin, ops, testRoute(t, "fallback", "PathPrefix(`/`)", "c")},
	}
}

// TestJWTClaimRouting: a valid token routes by its claims (a string
// claim, an array claim); an invalid, expired, unsigned or foreign token,
// or none, never matches, so the fallback route answers; the token is
// checked once per request, by the matchers and the route's jwt step
// together.
func TestJWTClaimRouting(t *testing.T) {
	t.Parallel()
	k, other := etest.NewJWTKey("k1"), etest.NewJWTKey("k1")
	rt, fe := front(t, jwtClaimConfig(t, k), Options{})
	exp := time.Now().Add(time.Hour).Unix()
	tok := func(key *etest.JWTKey, claims map[string]any) string {
		if claims["exp"] == nil {
			claims["exp"] = exp
		}
		claims["aud"] = "api"
		return "Bearer " + key.Sign(claims)
	}
	adminTok := tok(k, map[string]any{"sub": "alice", "role": "admin"})
	// The admin token's header and claims, with no signature ("alg":
	// "none"): never accepted.
	b64 := base64.RawURLEncoding
	parts := strings.Split(strings.TrimPrefix(adminTok, "Bearer "), ".")
	unsigned := "Bearer " + b64.EncodeToString([]byte(`{"alg":"none","kid":"k1"}`)) + "." + parts[1] + "."
	// user is the X-User the upstream sees: the token's sub behind the
	// policy; the client's own ("root") on the fallback, which has none.
	for _, c := range []struct {
		desc, auth, upstream, user string
	}{
		{"role admin", adminTok, "admin", "alice"},
		{"role admin again (cached grant)", adminTok, "admin", "alice"},
		{"group ops in an array", tok(k, map[string]any{"sub": "bob", "role": "user", "groups": []string{"dev", "ops"}}), "ops", "bob"},
		{"role user, no group", tok(k, map[string]any{"sub": "carol", "role": "user"}), "fallback", "root"},
		{"expired admin", tok(k, map[string]any{"sub": "alice", "role": "admin", "exp": time.Now().Add(-time.Hour).Unix()}), "fallback", "root"},
		{"admin of another audience", "Bearer " + k.Sign(map[string]any{"role": "admin", "aud": "web", "exp": exp}), "fallback", "root"},
		{"admin signed by a foreign key", tok(other, map[string]any{"sub": "mallory", "role": "admin"}), "fallback", "root"},
		{"unsigned admin", unsigned, "fallback", "root"},
		{"garbage", "Bearer a.b.c", "fallback", "root"},
		{"no token", "", "fallback", "root"},
	} {
		p := rt.snap.Load().jwts["idp"]
		before := p.checks.Load()
		resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/x", "Authorization", c.auth, "X-User", "root"))
		if resp.StatusCode != 200 || resp.Header.Get("X-Upstream") != c.upstream || resp.Header.Get("X-Got-X-User") != c.user {
			t.Errorf("%s: %d from %q, upstream saw X-User %q; want 200 from %q with %q", c.desc, resp.StatusCode,
				resp.Header.Get("X-Upstream"), resp.Header.Get("X-Got-X-User"), c.upstream, c.user)
		}
		if n := p.checks.Load() - before; n != 1 {
			t.Errorf("%s: the token was checked %d times, want once", c.desc, n)
		}
	}
}

// TestJWTClaimNoWork: with named jwt policies but no JWTClaim in the
// listener's rules, no request has its token looked at before routing,
// and a route without jwt_policy never checks one.
func TestJWTClaimNoWork(t *testing.T) {
	t.Parallel()
	k := etest.NewJWTKey("k1")
	cfg := jwtClaimConfig(t, k)
	cfg.Routes = cfg.Routes[2:] // the fallback only
	rt, fe := front(t, cfg, Options{})
	if hl := rt.snap.Load().http["web"]; hl.jwts != nil {
		t.Fatal("a listener without JWTClaim rules has the jwt policies")
	}
	auth := "Bearer " + k.Sign(map[string]any{"role": "admin", "aud": "api", "exp": time.Now().Add(time.Hour).Unix()})
	resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/x", "Authorization", auth))
	if resp.Header.Get("X-Upstream") != "fallback" {
		t.Fatalf("answered by %q", resp.Header.Get("X-Upstream"))
	}
	if n := rt.snap.Load().jwts["idp"].checks.Load(); n != 0 {
		t.Errorf("the token was checked %d times with no rule or route asking", n)
	}
}

// TestJWTPolicyRoute: a route with jwt_policy refuses what the named
// policy refuses (401), and the policy's claim headers go upstream.
func TestJWTPolicyRoute(t *testing.T) {
	t.Parallel()
	k := etest.NewJWTKey("k1")
	cfg := jwtClaimConfig(t, k)
	r := testRoute(t, "guarded", "PathPrefix(`/guarded`)", "c")
	r.JWTPolicy = "idp"
	cfg.Routes = []conf.Route{r}
	_, fe := front(t, cfg, Options{})
	resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/guarded", "Authorization", "Bearer a.b.c"))
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != jwtChallenge {
		t.Errorf("bad token: %d %q, want 401 with the challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	auth := "Bearer " + k.Sign(map[string]any{"sub": "dave", "aud": "api", "exp": time.Now().Add(time.Hour).Unix()})
	resp, _ = do(t, nil, newReq(t, "GET", fe.URL+"/guarded", "Authorization", auth))
	if resp.StatusCode != 200 || resp.Header.Get("X-Got-X-User") != "dave" {
		t.Errorf("good token: %d, X-User %q", resp.StatusCode, resp.Header.Get("X-Got-X-User"))
	}
}

func TestClaimHas(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc  string
		claim any
		value string
		want  bool
	}{
		{"string equal", "admin", "admin", true},
		{"string other", "admin", "Admin", false},
		{"array holds it", []any{"dev", "ops"}, "ops", true},
		{"array lacks it", []any{"dev", 7.0}, "7", false},
		{"integer", 42.0, "42", true},
		{"fraction", 1.5, "1.5", true},
		{"boolean", true, "true", true},
		{"boolean false", false, "true", false},
		{"object", map[string]any{"a": "b"}, "b", false},
		{"absent", nil, "x", false},
	} {
		if got := claimHas(c.claim, c.value); got != c.want {
			t.Errorf("%s: claimHas(%v, %q) = %v, want %v", c.desc, c.claim, c.value, got, c.want)
		}
	}
}

// TestJWTPolicyExplained: explain names a route's named jwt policy, and
// a JWTClaim route never matches explain's request (it has no token).
func TestJWTPolicyExplained(t *testing.T) {
	t.Parallel()
	cfg := jwtClaimConfig(t, etest.NewJWTKey("k1"))
	guarded := testRoute(t, "guarded", "Path(`/guarded`)", "c")
	guarded.JWTPolicy = "idp"
	cfg.Routes = append(cfg.Routes, guarded)
	s, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := s.Explain("web", &rule.HTTPRequest{Method: "GET", Host: "a", Path: "/guarded"}, "/guarded", "")
	if !ok || o.Route != "guarded" || len(o.Policies) != 1 || o.Policies[0] != "jwt idp" {
		t.Errorf("explain /guarded: %+v", o)
	}
	if o, _ := s.Explain("web", &rule.HTTPRequest{Method: "GET", Host: "a", Path: "/x"}, "/x", ""); o.Route != "fallback" {
		t.Errorf("explain /x: route %q, want the fallback (JWTClaim has no token to read)", o.Route)
	}
}

// BenchmarkJWTClaim is a request routed by JWTClaim with its route's
// jwt_policy (one check, a cached grant after the first request), beside
// the same listener without a JWTClaim rule ("no claim rule"): the token
// is then not looked at.
func BenchmarkJWTClaim(b *testing.B) {
	k := etest.NewJWTKey("k1")
	auth := "Bearer " + k.Sign(map[string]any{"sub": "alice", "role": "admin", "aud": "api", "exp": time.Now().Add(time.Hour).Unix()})
	respond := conf.Middleware{Kind: conf.Respond, Code: 200}
	policy := []conf.JWT{{Name: "idp", JWKS: []byte(etest.JWKS(k)), Audience: "api", Leeway: time.Second}}
	admin := testRoute(b, "admin", "PathPrefix(`/`) && JWTClaim(`idp`, `role`, `admin`)", "", respond)
	admin.JWTPolicy = "idp"
	for _, c := range []struct {
		desc   string
		routes []conf.Route
	}{
		{"claim rule", []conf.Route{admin, testRoute(b, "fallback", "PathPrefix(`/`)", "", respond)}},
		{"no claim rule", []conf.Route{testRoute(b, "fallback", "PathPrefix(`/`)", "", respond)}},
	} {
		b.Run(c.desc, func(b *testing.B) {
			rt := New(Options{})
			defer rt.Close()
			if err := rt.Apply(&conf.Config{Listeners: []conf.Listener{testListener()}, JWTs: policy, Routes: c.routes}); err != nil {
				b.Fatal(err)
			}
			h := rt.Proxy("web")
			req := httpmsg.Request{Method: "GET", Target: "/v1/users", Host: "api.example", ProtoMajor: 1, ProtoMinor: 1,
				RemoteAddr: netip.MustParseAddrPort("192.0.2.1:41000")}
			fields := httpmsg.Header{{Name: "User-Agent", Value: "bench"}, {Name: "Authorization", Value: auth}}
			b.ReportAllocs()
			for b.Loop() {
				req.Header = append(req.Header[:0], fields...)
				h.ServeProxy(discardProxyWriter{}, &req)
			}
		})
	}
}
