package router

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/conf"
	etest "github.com/edgeway/edgeway/internal/testutil"
)

// TestJWT: a route with jwt answers 401 without a valid bearer token;
// with one, the upstream gets the token's claims in the configured
// fields, never a client's own copies.
func TestJWT(t *testing.T) {
	t.Parallel()
	k := etest.NewJWTKey("k1")
	up := backend(t, "a")
	r := testRoute(t, "api", "PathPrefix(`/`)", "u")
	r.JWT = &conf.JWT{JWKS: []byte(etest.JWKS(k)), Audience: "api", Leeway: time.Second, ClaimHeaders: [][2]string{{"sub", "X-User"}}}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
	}
	_, fe := front(t, cfg, Options{})
	good := k.Sign(map[string]any{"sub": "alice", "aud": "api", "exp": time.Now().Add(time.Hour).Unix()})
	for _, c := range []struct {
		desc, auth string
		status     int
		user       string
	}{
		{"no token", "", 401, ""},
		{"garbage", "Bearer a.b.c", 401, ""},
		{"expired", "Bearer " + k.Sign(map[string]any{"sub": "alice", "aud": "api", "exp": time.Now().Add(-time.Hour).Unix()}), 401, ""},
		{"other audience", "Bearer " + k.Sign(map[string]any{"sub": "alice", "aud": "web", "exp": time.Now().Add(time.Hour).Unix()}), 401, ""},
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

// rotatingJWKS is an identity provider's jwks_uri: the key set it serves
// can change or fail, and its fetches are counted.
type rotatingJWKS struct {
	*httptest.Server
	doc     atomic.Pointer[string] // nil: 503
	fetches atomic.Int64
}

func newRotatingJWKS(t *testing.T, keys ...*etest.JWTKey) *rotatingJWKS {
	s := &rotatingJWKS{}
	s.serve(keys...)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		d := s.doc.Load()
		if d == nil {
			http.Error(w, "down", 503)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		io.WriteString(w, *d)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *rotatingJWKS) serve(keys ...*etest.JWTKey) {
	if keys == nil {
		s.doc.Store(nil)
		return
	}
	d := etest.JWKS(keys...)
	s.doc.Store(&d)
}

// TestJWTFromURL: with `jwks URL`, tokens of the keys the URL serves
// pass, an old key's tokens keep passing while the URL still lists the
// key, a new key's pass once the URL serves it (an unknown kid has the
// set fetched again), forged kids do not cause a fetch per request, and
// a failing URL leaves the last good set in use, counted in the metrics.
func TestJWTFromURL(t *testing.T) {
	t.Parallel()
	old, next := etest.NewJWTKey("2026-01"), etest.NewJWTKey("2026-02")
	idp := newRotatingJWKS(t, old)
	up := backend(t, "a")
	r := testRoute(t, "api", "PathPrefix(`/`)", "u")
	const refresh = time.Second // also the least gap between refetches for unknown kids
	r.JWT = &conf.JWT{JWKSURL: idp.URL + "/.well-known/jwks.json", JWKSRefresh: refresh, Leeway: time.Second,
		ClaimHeaders: [][2]string{{"sub", "X-User"}}}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
	}
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	_, fe := front(t, cfg, Options{Metrics: m})
	claims := func(sub string) map[string]any {
		return map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()}
	}
	get := func(token string) (int, string) {
		resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/x", "Authorization", "Bearer "+token))
		return resp.StatusCode, resp.Header.Get("X-Got-X-User")
	}
	oldTok, nextTok := old.Sign(claims("alice")), next.Sign(claims("bob"))

	if st, user := get(oldTok); st != 200 || user != "alice" {
		t.Fatalf("token of the served key: %d, user %q", st, user)
	}

	// A flood of tokens naming keys the URL never had.
	before, start := idp.fetches.Load(), time.Now()
	const forged = 100
	for i := range forged {
		if st, _ := get(old.SignAs("forged-"+string(rune('a'+i%26)), claims("mallory"))); st != 401 {
			t.Fatalf("forged kid: %d, want 401", st)
		}
	}
	// Background refreshes and refetches: each at most once per refresh.
	fetched, allowed := idp.fetches.Load()-before, 2*(int64(time.Since(start)/refresh)+1)
	if fetched > allowed || fetched >= forged/4 {
		t.Errorf("%d forged kids in %v: %d fetches, want at most %d", forged, time.Since(start).Round(time.Millisecond), fetched, allowed)
	}

	// Rotation: the URL adds the next key, then drops the old one.
	idp.serve(old, next)
	etest.WaitFor(t, "the next key's token to pass", func() bool { st, _ := get(nextTok); return st == 200 })
	if st, user := get(oldTok); st != 200 || user != "alice" {
		t.Errorf("old key still listed: %d, user %q; want 200 alice", st, user)
	}
	idp.serve(next)
	etest.WaitFor(t, "the dropped key's token to be refused", func() bool { st, _ := get(oldTok); return st == 401 })
	if st, user := get(nextTok); st != 200 || user != "bob" {
		t.Errorf("after the old key was dropped: %d, user %q", st, user)
	}

	// The URL fails: the last good set stays in use, the failures counted.
	idp.serve()
	series := "edgeway_jwks_fetches_total{result=failed,url=" + idp.URL + "/.well-known/jwks.json}"
	etest.WaitFor(t, "a failed fetch counted", func() bool { return gather(t, reg)[series] > 0 })
	if st, user := get(nextTok); st != 200 || user != "bob" {
		t.Errorf("while the URL fails: %d, user %q; want the last good set kept", st, user)
	}
}

// TestJWKSKeptAcrossReload: a reload naming the same URL keeps its key
// set (no refetch, no gap without keys); one that drops the URL stops it.
func TestJWKSKeptAcrossReload(t *testing.T) {
	t.Parallel()
	idp := newRotatingJWKS(t, etest.NewJWTKey("k"))
	up := backend(t, "a")
	r := testRoute(t, "api", "PathPrefix(`/`)", "u")
	r.JWT = &conf.JWT{JWKSURL: idp.URL, JWKSRefresh: time.Hour}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{r},
	}
	rt, _ := front(t, cfg, Options{})
	k := jwksKey{url: idp.URL, refresh: time.Hour}
	first := rt.jwks[k]
	etest.WaitFor(t, "the first fetch", func() bool { return first.Keys() != nil })
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if rt.jwks[k] != first || idp.fetches.Load() != 1 {
		t.Errorf("after a reload: remote kept %v, %d fetches; want the same one and 1", rt.jwks[k] == first, idp.fetches.Load())
	}
	cfg.Routes[0].JWT = nil
	if err := rt.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	if len(rt.jwks) != 0 {
		t.Errorf("a reload without the URL keeps %d remotes", len(rt.jwks))
	}
}
