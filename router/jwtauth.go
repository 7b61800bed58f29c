package router

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/jwt"
)

// jwtPolicy is a route's `jwt` block or a named `jwt NAME` policy,
// compiled at load time (a key set file parsed once; a URL's set kept by
// a jwt.Remote that Router.Apply attaches). A verified token is
// remembered until it expires (at most jwtCacheTTL) while the key set it
// was verified with is the one in use, so that a client's repeated token
// costs one signature check.
type jwtPolicy struct {
	name     string      // a named policy's name; "" for a route's block
	keys     *jwt.KeySet // from a file; nil with a URL
	url      jwksKey     // a URL's set; zero: a file's
	remote   *jwt.Remote // the URL's set, attached by Apply; nil in a Snapshot from Build
	issuer   string
	audience string
	leeway   time.Duration
	claims   [][2]string           // claim, header
	cache    *grantCache[jwtGrant] // token digest -> the claims
	// checks counts the tokens looked at (cache hits too), at most one
	// per request and policy: tests read it to see that a request's
	// token is checked once, and not at all when nothing asks.
	checks atomic.Int64
}

// jwtGrant is what a verified token gave, and the set that verified it.
type jwtGrant struct {
	fields []httpmsg.Field
	claims jwt.Claims // read only: shared by the requests that present the token
	keys   *jwt.KeySet
}

const (
	jwtCacheTTL = 5 * time.Minute
	jwtCacheMax = 4096
)

func compileJWT(c *conf.JWT) *jwtPolicy {
	if c == nil {
		return nil
	}
	p := &jwtPolicy{name: c.Name, issuer: c.Issuer, audience: c.Audience, leeway: c.Leeway, claims: c.ClaimHeaders,
		cache: newGrantCache[jwtGrant](jwtCacheMax)}
	if c.JWKSURL != "" {
		p.url = jwksKey{url: c.JWKSURL, refresh: c.JWKSRefresh, ca: string(c.JWKSCA)}
		return p
	}
	if ks, err := jwt.ParseKeySet(c.JWKS); err == nil {
		p.keys = ks
	} // else conf checked it; a policy without keys refuses every token
	return p
}

// compileNamedJWTs compiles the named policies, by name; nil: none.
func compileNamedJWTs(cs []conf.JWT) map[string]*jwtPolicy {
	if len(cs) == 0 {
		return nil
	}
	m := make(map[string]*jwtPolicy, len(cs))
	for i := range cs {
		m[cs[i].Name] = compileJWT(&cs[i])
	}
	return m
}

// keySet is the set tokens are verified with now; nil: none.
func (p *jwtPolicy) keySet() *jwt.KeySet {
	if p.remote != nil {
		return p.remote.Keys()
	}
	return p.keys
}

const jwtChallenge = `Bearer error="invalid_token"`

// tokenResult is what checking a request's bearer token gave.
type tokenResult uint8

const (
	tokenUnchecked tokenResult = iota // zero: no policy looked at the token yet
	tokenMissing                      // no bearer token (or no keys at all)
	tokenInvalid                      // refused: signature, exp, nbf, iss, aud
	tokenNoKeys                       // the jwks URL has not answered yet
	tokenValid
)

// checkToken checks the request's bearer token under p, once per request
// and policy: the route's jwt step after a JWTClaim matcher, or two
// JWTClaim calls, reuse the answer. A token whose key the URL's set lacks
// has the set fetched again (at most once per jwt.Remote.MinGap, one
// fetch shared) before it is refused.
func (x *exchange) checkToken(p *jwtPolicy) (tokenResult, *jwtGrant) {
	if x.tok.policy == p && x.tok.result != tokenUnchecked {
		return x.tok.result, &x.tok.grant
	}
	res, g := x.verifyToken(p)
	x.tok.policy, x.tok.result, x.tok.grant = p, res, g
	return res, &x.tok.grant
}

func (x *exchange) verifyToken(p *jwtPolicy) (tokenResult, jwtGrant) {
	p.checks.Add(1)
	v := x.in.Header.Get("Authorization")
	ks := p.keySet()
	if len(v) < 7 || !strings.EqualFold(v[:7], "bearer ") || (ks == nil && p.remote == nil) {
		return tokenMissing, jwtGrant{}
	}
	if ks == nil && p.remote.Refetch(x.in.Context()) {
		ks = p.remote.Keys()
	}
	if ks == nil {
		return tokenNoKeys, jwtGrant{}
	}
	token := strings.TrimSpace(v[7:])
	x.tokBuf = append(x.tokBuf[:0], token...) // hashed without a copy per request
	key := sha256.Sum256(x.tokBuf)
	if cap(x.tokBuf) > maxKeptBody {
		x.tokBuf = nil // a pooled exchange keeps a small buffer only
	}
	now := time.Now()
	if g, ok := p.cache.get(key, now); ok && g.keys == ks {
		return tokenValid, g
	}
	claims, err := ks.Verify(token, now, p.leeway, p.issuer, p.audience)
	if errors.Is(err, jwt.ErrUnknownKey) && p.remote != nil && p.remote.Refetch(x.in.Context()) {
		if next := p.remote.Keys(); next != ks {
			ks = next
			claims, err = ks.Verify(token, now, p.leeway, p.issuer, p.audience)
		}
	}
	if err != nil {
		return tokenInvalid, jwtGrant{}
	}
	g := jwtGrant{claims: claims, keys: ks}
	for _, c := range p.claims {
		if s := claims.String(c[0]); s != "" {
			g.fields = append(g.fields, httpmsg.Field{Name: c[1], Value: s})
		}
	}
	until := now.Add(jwtCacheTTL)
	if exp, ok := claims["exp"].(float64); ok && time.Unix(int64(exp), 0).Before(until) {
		until = time.Unix(int64(exp), 0)
	}
	p.cache.put(key, g, until)
	return tokenValid, g
}

// verifyJWT runs the route's jwt policy: a request without a valid bearer
// token gets 401; with a URL that has not answered yet, 503. It reports
// whether the request was answered.
func (x *exchange) verifyJWT() bool {
	p := x.rt.jwt
	res, g := x.checkToken(p)
	switch res {
	case tokenValid:
		x.claimFields = g.fields
		return false
	case tokenMissing:
		x.writeText(401, errorBodies[401], false, httpmsg.Field{Name: "WWW-Authenticate", Value: "Bearer"})
	case tokenNoKeys: // the URL has not answered: not the client's fault
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "jwt: no key set from the jwks URL yet",
			slog.String("route", x.rt.name), slog.String("url", metricURL(p.remote.URL)))
		x.plainError(503)
	default:
		x.writeText(401, errorBodies[401], false, httpmsg.Field{Name: "WWW-Authenticate", Value: jwtChallenge})
	}
	return true
}

// HasClaim is rule.TokenClaims for the JWTClaim matcher: the request's
// token checked (once) under the listener's named policy.
func (x *exchange) HasClaim(policy, claim, value string) bool {
	p := x.l.jwts[policy]
	if p == nil {
		return false // conf refuses an unknown name; a Snapshot from Build may lack it
	}
	res, g := x.checkToken(p)
	return res == tokenValid && claimHas(g.claims[claim], value)
}

// claimHas reports whether a claim's JSON value v holds value: a string
// equal to it, an array with such a string, or a number or boolean
// written as value.
func claimHas(v any, value string) bool {
	switch c := v.(type) {
	case string:
		return c == value
	case []any:
		for _, e := range c {
			if s, ok := e.(string); ok && s == value {
				return true
			}
		}
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64) == value
	case bool:
		return strconv.FormatBool(c) == value
	}
	return false
}

// setClaimFields puts the token's claim fields in the outbound fields h,
// in place of a client's own copies.
func (x *exchange) setClaimFields(h httpmsg.Header) httpmsg.Header {
	return replaceFields(h, x.claimFields, func(name string) bool {
		for _, c := range x.rt.jwt.claims {
			if httpmsg.EqualFold(name, c[1]) {
				return true
			}
		}
		return false
	})
}

// routeJWT is rc's jwt policy: its own block, or the named one it
// refers to (shared, so that a token JWTClaim checked is not checked
// again); nil: none.
func routeJWT(rc conf.Route, named map[string]*jwtPolicy) *jwtPolicy {
	if rc.JWTPolicy != "" {
		return named[rc.JWTPolicy]
	}
	return compileJWT(rc.JWT)
}

// usesJWTClaim reports whether a rule of the routes on listener calls
// JWTClaim.
func usesJWTClaim(listener string, routes []conf.Route) bool {
	for _, rc := range routes {
		if rc.Rule != nil && onListener(rc.Listeners, listener) && len(rc.Rule.JWTPolicies()) > 0 {
			return true
		}
	}
	return false
}
