package router

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/jwt"
)

// jwtPolicy is a route's `jwt` block, compiled at load time (a key set
// file parsed once; a URL's set kept by a jwt.Remote that Router.Apply
// attaches). A verified token is remembered until it expires (at most
// jwtCacheTTL) while the key set it was verified with is the one in use,
// so that a client's repeated token costs one signature check.
type jwtPolicy struct {
	keys     *jwt.KeySet // from a file; nil with a URL
	url      jwksKey     // a URL's set; zero: a file's
	remote   *jwt.Remote // the URL's set, attached by Apply; nil in a Snapshot from Build
	issuer   string
	audience string
	leeway   time.Duration
	claims   [][2]string           // claim, header
	cache    *grantCache[jwtGrant] // token digest -> the claim fields
}

// jwtGrant is what a verified token gave, and the set that verified it.
type jwtGrant struct {
	fields []httpmsg.Field
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
	p := &jwtPolicy{issuer: c.Issuer, audience: c.Audience, leeway: c.Leeway, claims: c.ClaimHeaders,
		cache: newGrantCache[jwtGrant](jwtCacheMax)}
	if c.JWKSURL != "" {
		p.url = jwksKey{url: c.JWKSURL, refresh: c.JWKSRefresh}
		return p
	}
	if ks, err := jwt.ParseKeySet(c.JWKS); err == nil {
		p.keys = ks
	} // else conf checked it; a policy without keys refuses every token
	return p
}

// keySet is the set tokens are verified with now; nil: none.
func (p *jwtPolicy) keySet() *jwt.KeySet {
	if p.remote != nil {
		return p.remote.Keys()
	}
	return p.keys
}

const jwtChallenge = `Bearer error="invalid_token"`

// verifyJWT runs the route's jwt policy: a request without a valid bearer
// token gets 401; with a URL that has not answered yet, 503. A token
// whose key the URL's set lacks has the set fetched again (at most once
// per jwt.Remote.MinGap, one fetch shared) before it is refused. It
// reports whether the request was answered.
func (x *exchange) verifyJWT() bool {
	p := x.rt.jwt
	v := x.in.Header.Get("Authorization")
	ks := p.keySet()
	if len(v) < 7 || !strings.EqualFold(v[:7], "bearer ") || (ks == nil && p.remote == nil) {
		x.writeText(401, errorBodies[401], false, httpmsg.Field{Name: "WWW-Authenticate", Value: "Bearer"})
		return true
	}
	if ks == nil && p.remote.Refetch(x.in.Context()) {
		ks = p.remote.Keys()
	}
	if ks == nil { // the URL has not answered: not the client's fault
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "jwt: no key set from the jwks URL yet",
			slog.String("route", x.rt.name), slog.String("url", p.remote.URL))
		x.plainError(503)
		return true
	}
	token := strings.TrimSpace(v[7:])
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	if g, ok := p.cache.get(key, now); ok && g.keys == ks {
		x.claimFields = g.fields
		return false
	}
	claims, err := ks.Verify(token, now, p.leeway, p.issuer, p.audience)
	if errors.Is(err, jwt.ErrUnknownKey) && p.remote != nil && p.remote.Refetch(x.in.Context()) {
		if next := p.remote.Keys(); next != ks {
			ks = next
			claims, err = ks.Verify(token, now, p.leeway, p.issuer, p.audience)
		}
	}
	if err != nil {
		x.writeText(401, errorBodies[401], false, httpmsg.Field{Name: "WWW-Authenticate", Value: jwtChallenge})
		return true
	}
	var fields []httpmsg.Field
	for _, c := range p.claims {
		if s := claims.String(c[0]); s != "" {
			fields = append(fields, httpmsg.Field{Name: c[1], Value: s})
		}
	}
	x.claimFields = fields
	until := now.Add(jwtCacheTTL)
	if exp, ok := claims["exp"].(float64); ok && time.Unix(int64(exp), 0).Before(until) {
		until = time.Unix(int64(exp), 0)
	}
	p.cache.put(key, jwtGrant{fields: fields, keys: ks}, until)
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
