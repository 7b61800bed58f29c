package rule

// JWTClaim(`POLICY`, `CLAIM`, `VALUE`), edgeway's own matcher: it matches
// a request whose bearer token is valid under the named jwt policy (a
// main-level `jwt NAME { ... }` block) and whose claim CLAIM has the value
// VALUE. The rule knows the policy only by name; the router verifies the
// token (once per request, and only when a JWTClaim call is evaluated)
// through HTTPRequest.Token.

// TokenClaims answers JWTClaim for one request.
type TokenClaims interface {
	// HasClaim reports whether the request's bearer token is valid under
	// the jwt policy named policy and its claim holds value: a string
	// claim equal to it, an array claim with a string element equal to
	// it, or a number or boolean claim written so (`42`, `true`). A
	// missing, invalid or expired token, or an unknown policy, is false.
	HasClaim(policy, claim, value string) bool
}

func buildJWTClaim(_ *parser, a []arg) (httpFn, *Error) {
	policy, claim, value := a[0].val, a[1].val, a[2].val
	return func(r *HTTPRequest) bool { return r.Token != nil && r.Token.HasClaim(policy, claim, value) }, nil
}

// Ref is a name a rule refers to, with the byte offset of its literal.
type Ref struct {
	Name   string
	Offset int
}

// JWTPolicies lists the jwt policies the rule's JWTClaim calls name, in
// rule order, so that a configuration can check they exist.
func (r *Rule) JWTPolicies() []Ref {
	var out []Ref
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.op == opLeaf {
			if n.leaf.spec.name == "JWTClaim" {
				out = append(out, Ref{Name: n.leaf.args[0], Offset: n.leaf.offs[0]})
			}
			return
		}
		walk(n.left)
		walk(n.right)
	}
	walk(r.tree)
	return out
}
