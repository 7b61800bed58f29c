package conf

import (
	"crypto/x509"
	"strings"
	"time"

	"github.com/edgeway/edgeway/routes"
	"github.com/edgeway/edgeway/routes/rule"
)

// The jwt policies: a route's inline `jwt { ... }` block, a named
// main-level `jwt NAME { ... }` block that routes (`jwt_policy NAME`) and
// JWTClaim matchers refer to, and the options both share (jwtTable).

// jwtBlock reads the options of a jwt block d; name is a named policy's
// name, "" for a route's block.
func (b *builder) jwtBlock(d *routes.Directive, name string) *JWT {
	j := &JWT{Name: name, Leeway: 30 * time.Second, Pos: b.pos(d.Pos)}
	run(b, jwtTable, j, d.Block.Directives)
	if j.JWKSFile == "" && j.JWKSURL == "" && !hasDirective(d, "jwks") {
		b.missingf(d, "jwt block has no jwks (expected `jwks FILE` or `jwks URL`, a JSON Web Key Set)")
	}
	if j.JWKSURL == "" {
		for _, c := range d.Block.Directives {
			switch c.Name {
			case "jwks_refresh":
				b.errorf(c.Pos, "jwks_refresh: only a jwks URL is refreshed (a file is watched)")
			case "jwks_ca":
				b.errorf(c.Pos, "jwks_ca: only an https jwks URL has a server to verify")
			}
		}
	}
	if j.JWKSCA != nil && !strings.HasPrefix(strings.ToLower(j.JWKSURL), "https://") && j.JWKSURL != "" {
		b.errorf(findDirective(d, "jwks_ca").Pos, "jwks_ca: the jwks URL %s is not https", j.JWKSURL)
	}
	if j.JWKSURL != "" && j.JWKSRefresh == 0 {
		j.JWKSRefresh = DefaultJWKSRefresh
	}
	return j
}

// namedJWTDirective reads a main-level `jwt NAME { ... }` policy.
func namedJWTDirective(b *builder, _ *routes.File, d *routes.Directive) {
	name := b.name(d, "jwt policy")
	b.cfg.JWTs = append(b.cfg.JWTs, *b.jwtBlock(d, name))
}

// jwtPolicyDirective reads a route's `jwt_policy NAME`.
func jwtPolicyDirective(b *builder, r *draft, d *routes.Directive) {
	if r.jwt != nil {
		b.errorf(d.Pos, "route %q has both a `jwt` block and `jwt_policy`: a route checks one token policy", r.name)
	}
	r.jwtPolicy = d.Args[0].Value
	b.refs = append(b.refs, ref{ns: "jwt policy", name: r.jwtPolicy, pos: d.Args[0].Pos})
}

// jwksCA reads `jwks_ca FILE`: PEM certificates the jwks URL's server
// must chain to.
func jwksCA(b *builder, j *JWT, d *routes.Directive) {
	path := b.filePath(d, 0, ReadFile)
	data := b.readPEM(d, 0, path)
	if data == nil {
		return
	}
	if !x509.NewCertPool().AppendCertsFromPEM(data) {
		b.errorf(d.Args[0].Pos, "jwks_ca: %s holds no PEM certificate", path)
		return
	}
	j.JWKSCA, j.JWKSCAFile = data, path
}

// jwtClaimRefs records the jwt policies that the JWTClaim calls of a
// rule (the match argument a) name, checked once every file is read.
func (b *builder) jwtClaimRefs(a routes.Arg, r *rule.Rule) {
	for _, pr := range r.JWTPolicies() {
		b.refs = append(b.refs, ref{ns: "jwt policy", name: pr.Name, pos: b.at(a, pr.Offset)})
	}
}

// jwtFiles lists the files a jwt block d reads (a key set file, a CA),
// so that an edited one reloads like a changed route file.
func jwtFiles(main string, d *routes.Directive) []string {
	var out []string
	for _, j := range d.Block.Directives {
		if (j.Name == "jwks" || j.Name == "jwks_ca") && len(j.Args) == 1 && !isHTTPURL(j.Args[0].Value) {
			out = append(out, ConfigPath(main, j.Args[0].Value))
		}
	}
	return out
}

// unusedJWTs warns about a named jwt policy no route or rule refers to.
func (b *builder) unusedJWTs() {
	used := map[string]bool{}
	for _, r := range b.refs {
		if r.ns == "jwt policy" {
			used[r.name] = true
		}
	}
	for _, j := range b.cfg.JWTs {
		if !used[j.Name] {
			b.warnAt(j.Pos, "jwt policy %q is not used by any route (jwt_policy) or rule (JWTClaim)", j.Name)
		}
	}
}
