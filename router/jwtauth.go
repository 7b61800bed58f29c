package router

import (
	"crypto/sha256"
	"strings"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/jwt"
)

// jwtPolicy is a route's `jwt` block, compiled at load time (the key set
// parsed once). A verified token is remembered until it expires (at most
// jwtCacheTTL), so that a client's repeated token costs one signature
// check.
type jwtPolicy struct {
	keys     *jwt.KeySet
	issuer   string
	audience string
	leeway   time.Duration
	claims   [][2]string                  // claim, header
	cache    *grantCache[[]httpmsg.Field] // token digest -> the claim fields
}

const (
	jwtCacheTTL = 5 * time.Minute
	jwtCacheMax = 4096
)

func compileJWT(c *conf.JWT) *jwtPolicy {
	if c == nil {
		return nil
	}
	ks, err := jwt.ParseKeySet(c.JWKS)
	if err != nil {
		return &jwtPolicy{} // conf checked it; a policy without keys refuses every token
	}
	return &jwtPolicy{keys: ks, issuer: c.Issuer, audience: c.Audience, leeway: c.Leeway, claims: c.ClaimHeaders,
		cache: newGrantCache[[]httpmsg.Field](jwtCacheMax)}
}

const jwtChallenge = `Bearer error="invalid_token"`

// verifyJWT runs the route's jwt policy: a request without a valid bearer
// token gets 401. It reports whether the request was answered.
func (x *exchange) verifyJWT() bool {
	p := x.rt.jwt
	v := x.in.Header.Get("Authorization")
	if len(v) < 7 || !strings.EqualFold(v[:7], "bearer ") || p.keys == nil {
		x.writeText(401, errorBodies[401], false, httpmsg.Field{Name: "WWW-Authenticate", Value: "Bearer"})
		return true
	}
	token := strings.TrimSpace(v[7:])
	key := sha256.Sum256([]byte(token))
	now := time.Now()
	if fields, ok := p.cache.get(key, now); ok {
		x.claimFields = fields
		return false
	}
	claims, err := p.keys.Verify(token, now, p.leeway, p.issuer, p.audience)
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
	p.cache.put(key, fields, until)
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
