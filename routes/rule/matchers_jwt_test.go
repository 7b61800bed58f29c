package rule

import (
	"strings"
	"testing"
)

// jwtClaimsFake is a TokenClaims holding one policy's valid token claims.
type jwtClaimsFake struct {
	policy string
	claims map[string]string
	asked  int
}

func (f *jwtClaimsFake) HasClaim(policy, claim, value string) bool {
	f.asked++
	v, ok := f.claims[claim]
	return policy == f.policy && ok && v == value
}

func TestJWTClaimMatcher(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		rule  string
		token bool // the request has a TokenClaims
		want  bool
		asked int // HasClaim calls made
	}{
		{desc: "claim equal", rule: "JWTClaim(`idp`, `role`, `admin`)", token: true, want: true, asked: 1},
		{desc: "claim other value", rule: "JWTClaim(`idp`, `role`, `user`)", token: true, asked: 1},
		{desc: "other policy", rule: "JWTClaim(`other`, `role`, `admin`)", token: true, asked: 1},
		{desc: "no token source", rule: "JWTClaim(`idp`, `role`, `admin`)"},
		{desc: "negated without source", rule: "!JWTClaim(`idp`, `role`, `admin`)", want: true},
		{desc: "lower-case spelling", rule: "jwtclaim(`idp`, `role`, `admin`)", token: true, want: true, asked: 1},
		{desc: "not evaluated when the path fails", rule: "Path(`/x`) && JWTClaim(`idp`, `role`, `admin`)", token: true},
		{desc: "same policy and claim, two values", rule: "JWTClaim(`idp`, `role`, `admin`) && JWTClaim(`idp`, `role`, `user`)", token: true, asked: 2},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(HTTP, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			f := &jwtClaimsFake{policy: "idp", claims: map[string]string{"role": "admin"}}
			req := HTTPRequest{Path: "/y"}
			if tt.token {
				req.Token = f
			}
			if got := r.MatchHTTP(&req); got != tt.want {
				t.Errorf("%s = %v, want %v", tt.rule, got, tt.want)
			}
			if f.asked != tt.asked {
				t.Errorf("%s asked the token %d times, want %d", tt.rule, f.asked, tt.asked)
			}
		})
	}
}

func TestJWTClaimErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, rule, msg string
		kind            Kind
		off             int
	}{
		{desc: "two arguments", rule: "JWTClaim(`idp`, `role`)", off: 22, msg: "JWTClaim takes 3 arguments, got 2"},
		{desc: "empty value", rule: "JWTClaim(`idp`, `role`, ``)", off: 24, msg: "empty"},
		{desc: "in a tcp rule", kind: TCP, rule: "JWTClaim(`a`, `b`, `c`)", msg: "HTTP matcher"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tt.kind, tt.rule)
			e, ok := err.(*Error)
			if !ok || !strings.Contains(e.Msg, tt.msg) || e.Offset != tt.off {
				t.Fatalf("Parse(%s) = %v, want an error at %d with %q", tt.rule, err, tt.off, tt.msg)
			}
		})
	}
}

func TestJWTPolicies(t *testing.T) {
	t.Parallel()
	text := "Host(`a`) && (JWTClaim(`idp`, `role`, `x`) || !JWTClaim(`corp`, `grp`, `y`))"
	r, err := Parse(HTTP, text)
	if err != nil {
		t.Fatal(err)
	}
	refs := r.JWTPolicies()
	if len(refs) != 2 || refs[0].Name != "idp" || refs[1].Name != "corp" {
		t.Fatalf("JWTPolicies = %+v, want idp then corp", refs)
	}
	for _, ref := range refs {
		if got := text[ref.Offset : ref.Offset+len(ref.Name)+2]; got != "`"+ref.Name+"`" {
			t.Errorf("offset of %s points at %q", ref.Name, got)
		}
	}
	if r, _ := Parse(HTTP, "Host(`a`)"); len(r.JWTPolicies()) != 0 {
		t.Error("a rule without JWTClaim names policies")
	}
}

// FuzzJWTClaim: any three literals that parse as a JWTClaim call name
// their policy back from JWTPolicies at the offset of the first literal,
// and the compiled matcher asks the token source with exactly the
// unquoted arguments.
func FuzzJWTClaim(f *testing.F) {
	f.Add("`idp`", "`role`", "`admin`")
	f.Add(`"idp"`, `"https://example.com/roles"`, `"a\"b"`)
	f.Add("`a`", "`b`", "``")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		text := "JWTClaim(" + a + ", " + b + ", " + c + ")"
		r, err := Parse(HTTP, text)
		if err != nil {
			return
		}
		refs := r.JWTPolicies()
		if len(refs) != 1 || refs[0].Offset != len("JWTClaim(") {
			t.Fatalf("%s: refs %+v", text, refs)
		}
		f := &jwtClaimsAsk{}
		r.MatchHTTP(&HTTPRequest{Token: f})
		if f.policy != refs[0].Name || f.n != 1 {
			t.Fatalf("%s: asked %d times for policy %q, JWTPolicies says %q", text, f.n, f.policy, refs[0].Name)
		}
	})
}

// jwtClaimsAsk records what JWTClaim asked.
type jwtClaimsAsk struct {
	policy, claim, value string
	n                    int
}

func (a *jwtClaimsAsk) HasClaim(policy, claim, value string) bool {
	a.policy, a.claim, a.value = policy, claim, value
	a.n++
	return false
}
