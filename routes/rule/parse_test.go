package rule

import (
	"errors"
	"strings"
	"testing"
)

// format prints a parsed tree in a fixed shape, for tests.
func format(n *node) string {
	switch n.op {
	case opAnd:
		return "and(" + format(n.left) + "," + format(n.right) + ")"
	case opOr:
		return "or(" + format(n.left) + "," + format(n.right) + ")"
	}
	s := n.leaf.spec.name + "(" + strings.Join(n.leaf.args, ",") + ")"
	if n.leaf.not {
		s = "!" + s
	}
	return s
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		kind Kind
		rule string
		off  int
		msg  string // substring of the message
	}{
		// §1.4 and the syntax class of §2.
		{desc: "empty rule", rule: "", off: 0, msg: "empty rule"},
		{desc: "blank rule", rule: "  \n", off: 0, msg: "empty rule"},
		{desc: "dangling &&", rule: "Host(`a`) &&", off: 12, msg: "syntax error"},
		{desc: "dangling ||", rule: "Host(`a`) || ", off: 13, msg: "syntax error"},
		{desc: "unclosed paren", rule: "(Host(`a`)", off: 10, msg: "syntax error"},
		{desc: "extra paren", rule: "Host(`a`))", off: 9, msg: "unexpected ')'"},
		{desc: "missing operator", rule: "Host(`a`) Path(`/`)", off: 10, msg: "missing && or ||"},
		{desc: "fingerprint not hex", rule: "ClientCertFingerprint(`zz`)", off: 22, msg: "not a SHA-256 digest"},
		{desc: "fingerprint too short", rule: "ClientCertFingerprint(`abcd`)", off: 22, msg: "not a SHA-256 digest"},
		{desc: "cert matcher in a tcp rule", kind: TCP, rule: "ClientCertSAN(`a`)", off: 0, msg: "HTTP matcher"},
		{desc: "explicit semicolon", rule: "Host(`a`);", off: 9, msg: "syntax error"},
		{desc: "bad escape in double quotes", rule: `HostRegexp("^a\.com$")`, off: 15, msg: "escape sequence"},
		{desc: "unterminated raw string", rule: "Host(`a)", off: 5, msg: "syntax error"},
		{desc: "newline in double quotes", rule: "Host(\"a\n\")", off: 5, msg: "not terminated"},
		{desc: "unterminated comment", rule: "Host(`a`) /* x\n", off: 10, msg: "not terminated"},
		{desc: "bad rune literal", rule: "Host('abc')", off: 5, msg: "syntax error"},
		// unsupported node/operator
		{desc: "word and", rule: "Host(`a`) and Host(`b`)", off: 10, msg: "missing && or ||"},
		{desc: "operator ==", rule: "Host(`a`) == Host(`b`)", off: 10, msg: "unsupported operator =="},
		{desc: "operator &", rule: "Host(`a`) & Host(`b`)", off: 10, msg: "unsupported operator &"},
		{desc: "operator <", rule: "Host(`a`) < Host(`b`)", off: 10, msg: "unsupported operator <"},
		{desc: "unary minus", rule: "-Host(`a`)", off: 0, msg: "unsupported operator -"},
		{desc: "unary xor", rule: "^Host(`a`)", off: 0, msg: "unsupported operator ^"},
		{desc: "bare identifier", rule: "rulewithnotmatcher", off: 0, msg: "found identifier"},
		{desc: "bare matcher name", rule: "Host(`a`) || Host", off: 13, msg: "found identifier Host"},
		{desc: "bare string", rule: "`a.com`", off: 0, msg: "found literal"},
		{desc: "selector call", rule: "a.Host(`x`)", off: 0, msg: "expected a matcher name"},
		{desc: "ellipsis", rule: "Host(`a`...)", off: 8, msg: "'...'"},
		// unknown matcher (§1.2)
		{desc: "unknown name", rule: "Foobar(`x`)", off: 0, msg: `unknown matcher "Foobar"`},
		{desc: "mixed case", rule: "Host(`a`) && pathPrefix(`/a`)", off: 13, msg: "did you mean PathPrefix?"},
		{desc: "mixed case hOST", rule: "hOST(`a`)", off: 0, msg: "did you mean Host?"},
		{desc: "TCP matcher in HTTP", rule: "HostSNI(`a`)", off: 0, msg: "TCP matcher"},
		{desc: "HTTP matcher in TCP", kind: TCP, rule: "Host(`a`)", off: 0, msg: "HTTP matcher"},
		{desc: "PathPrefix in TCP", kind: TCP, rule: "HostSNI(`a`) && PathPrefix(`/`)", off: 16, msg: "HTTP matcher"},
		{desc: "hostSNI mixed case", kind: TCP, rule: "hostSNI(`a`)", off: 0, msg: "did you mean HostSNI?"},
		{desc: "v2 Headers", rule: "Headers(`a`, `b`)", off: 0, msg: "v2"},
		{desc: "v2 HostHeader", rule: "HostHeader(`a`)", off: 0, msg: "v2"},
		// argument type (§1.3)
		{desc: "number", rule: "Host(1)", off: 5, msg: "must be a string literal"},
		{desc: "nested call", rule: "Host(Path(`/`))", off: 5, msg: "must be a string literal"},
		{desc: "unquoted", rule: "Host(example.com)", off: 5, msg: "quote it"},
		{desc: "rune literal", rule: "Host('a')", off: 5, msg: "single quotes"},
		{desc: "concatenation", rule: "Host(`a` + `b`)", off: 5, msg: "must be a string literal"},
		{desc: "parenthesised literal", rule: "Host((`a`))", off: 5, msg: "must be a string literal"},
		{desc: "second argument", rule: "Header(`X`, Y)", off: 12, msg: "argument 2"},
		// no / empty argument
		{desc: "no argument", rule: "Host()", off: 5, msg: "got none"},
		{desc: "empty argument", rule: "Host(``)", off: 5, msg: "is empty"},
		{desc: "empty double-quoted", rule: `Host("")`, off: 5, msg: "is empty"},
		{desc: "empty second argument", rule: "Header(`X`, ``)", off: 12, msg: "argument 2 is empty"},
		{desc: "empty before count", rule: "Host(`a`, ``)", off: 10, msg: "is empty"},
		// wrong count
		{desc: "Host two", rule: "Host(`a`,`b`)", off: 9, msg: "Host takes 1 argument, got 2"},
		{desc: "Header one", rule: "Header(`X`)", off: 10, msg: "Header takes 2 arguments, got 1"},
		{desc: "Query three", rule: "Query(`a`,`b`,`c`)", off: 14, msg: "Query takes 1 or 2 arguments, got 3"},
		{desc: "HeaderRegexp three", rule: "HeaderRegexp(`a`,`b`,`c`)", off: 21, msg: "takes 2 arguments, got 3"},
		{desc: "ALPN two", kind: TCP, rule: "ALPN(`a`,`b`)", off: 9, msg: "ALPN takes 1 argument"},
		// matcher-specific (§2)
		{desc: "non-ASCII Host", rule: "Host(`bücher.de`)", off: 5, msg: "non-ASCII"},
		{desc: "non-ASCII HostRegexp", rule: "HostRegexp(`ü`)", off: 11, msg: "non-ASCII"},
		{desc: "Path without slash", rule: "Path(`a`)", off: 5, msg: `Path value must start with "/"`},
		{desc: "PathPrefix without slash", rule: "PathPrefix(`a`)", off: 11, msg: `PathPrefix value must start with "/"`},
		{desc: "PathRegexp invalid", rule: "PathRegexp(`(`)", off: 11, msg: "invalid regexp"},
		{desc: "HostRegexp look-ahead", rule: "HostRegexp(`a(?=b)`)", off: 11, msg: "invalid regexp"},
		{desc: "HeaderRegexp invalid", rule: "HeaderRegexp(`X`, `(`)", off: 18, msg: "invalid regexp"},
		{desc: "QueryRegexp invalid", rule: "QueryRegexp(`q`, `[`)", off: 17, msg: "invalid regexp"},
		{desc: "ClientIP number", rule: "ClientIP(`1`)", off: 9, msg: "neither an IP"},
		{desc: "ClientIP short", rule: "ClientIP(`10.1`)", off: 9, msg: "neither an IP"},
		{desc: "ClientIP word", rule: "ClientIP(`foo`)", off: 9, msg: "neither an IP"},
		{desc: "ClientIP bits", rule: "ClientIP(`1.2.3.4/33`)", off: 9, msg: "neither an IP"},
		{desc: "ClientIP zone", rule: "ClientIP(`fe80::1%eth0`)", off: 9, msg: "neither an IP"},
		{desc: "TCP ClientIP", kind: TCP, rule: "ClientIP(`foo`)", off: 9, msg: "neither an IP"},
		{desc: "HostSNI double wildcard", kind: TCP, rule: "HostSNI(`*.*.a.com`)", off: 8, msg: "not a valid hostname"},
		{desc: "HostSNI glued wildcard", kind: TCP, rule: "HostSNI(`*foo.com`)", off: 8, msg: "not a valid hostname"},
		{desc: "HostSNI space", kind: TCP, rule: "HostSNI(`a b`)", off: 8, msg: "not a valid hostname"},
		{desc: "HostSNI slash", kind: TCP, rule: "HostSNI(`a/b`)", off: 8, msg: "not a valid hostname"},
		{desc: "HostSNI non-ASCII", kind: TCP, rule: "HostSNI(`ä.com`)", off: 8, msg: "not a valid hostname"},
		{desc: "HostSNIRegexp non-ASCII", kind: TCP, rule: "HostSNIRegexp(`é`)", off: 14, msg: "non-ASCII"},
		{desc: "ALPN acme-tls/1", kind: TCP, rule: "ALPN(`acme-tls/1`)", off: 5, msg: "acme-tls/1"},
		{desc: "error in right operand", rule: "Host(`a`) && !(Path(`/`) || Path(`x`))", off: 33, msg: "Path value must start"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.kind, tt.rule)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want error", tt.rule, r.Text())
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Offset != tt.off || !strings.Contains(e.Msg, tt.msg) {
				t.Errorf("Parse(%q) error at %d %q, want at %d containing %q", tt.rule, e.Offset, e.Msg, tt.off, tt.msg)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		kind Kind
		rule string
		tree string
	}{
		{desc: "raw string", rule: "Host(`a.com`)", tree: "Host(a.com)"},
		{desc: "double quotes with escapes", rule: `Host("a\x2ecom")`, tree: "Host(a.com)"},
		{desc: "escaped backslash", rule: `HostRegexp("^a\\.com$")`, tree: `HostRegexp(^a\.com$)`},
		{desc: "trailing comma", rule: "Host(`a.com`,)", tree: "Host(a.com)"},
		{desc: "comments", rule: "/* c */ Host(`a`) // end\n && Path(`/`) // x", tree: "and(Host(a),Path(/))"},
		{desc: "newline before operator", rule: "Host(`a`)\n  && Path(`/`)\n", tree: "and(Host(a),Path(/))"},
		{desc: "newline inside raw string", rule: "Path(`/a\nb`)", tree: "Path(/a\nb)"},
		{desc: "block comment with newline", rule: "Host(`a`) /* x\n y */ || Path(`/`)", tree: "or(Host(a),Path(/))"},
		{desc: "comment marker in string", rule: "Path(`/a//b`) && Path(\"/*\")", tree: "and(Path(/a//b),Path(/*))"},
		{desc: "newlines and tabs", rule: "Host(`a`)\n\t&&\n\tPath(`/`)", tree: "and(Host(a),Path(/))"},
		{desc: "and binds tighter", rule: "Host(`a`) && Path(`/b`) || !Path(`/c`)", tree: "or(and(Host(a),Path(/b)),!Path(/c))"},
		{desc: "or then and", rule: "Host(`a`) || Path(`/b`) && Path(`/c`)", tree: "or(Host(a),and(Path(/b),Path(/c)))"},
		{desc: "left associative", rule: "Host(`a`) || Host(`b`) || Host(`c`)", tree: "or(or(Host(a),Host(b)),Host(c))"},
		{desc: "De Morgan and", rule: "!(Host(`a`) && Path(`/b`))", tree: "or(!Host(a),!Path(/b))"},
		{desc: "De Morgan or", rule: "!(Host(`a`) || !Path(`/b`))", tree: "and(!Host(a),Path(/b))"},
		{desc: "double negation", rule: "!!Host(`a`)", tree: "Host(a)"},
		{desc: "nested parens", rule: "((Host(`a`)))", tree: "Host(a)"},
		{desc: "PathRegexp without slash", rule: "PathRegexp(`css`)", tree: "PathRegexp(css)"},
		{desc: "Query one argument", rule: "Query(`q`)", tree: "Query(q)"},
		{desc: "QueryRegexp two arguments", rule: "QueryRegexp(`q`, `^x`)", tree: "QueryRegexp(q,^x)"},
		{desc: "lower spelling", rule: "pathprefix(`/a`)", tree: "PathPrefix(/a)"},
		{desc: "upper spelling", rule: "PATHPREFIX(`/a`)", tree: "PathPrefix(/a)"},
		{desc: "title spelling", rule: "Pathprefix(`/a`)", tree: "PathPrefix(/a)"},
		{desc: "ClientIP CIDR", rule: "ClientIP(`10.0.0.0/8`)", tree: "ClientIP(10.0.0.0/8)"},
		{desc: "ClientIP v6", rule: "ClientIP(`::1`)", tree: "ClientIP(::1)"},
		{desc: "TCP catch-all", kind: TCP, rule: "HostSNI(`*`)", tree: "HostSNI(*)"},
		{desc: "TCP wildcard", kind: TCP, rule: "HostSNI(`*.a.com`) && ALPN(`h2`)", tree: "and(HostSNI(*.a.com),ALPN(h2))"},
		{desc: "TCP IP as SNI", kind: TCP, rule: "HostSNI(`10::10`)", tree: "HostSNI(10::10)"},
		{desc: "TCP title spelling", kind: TCP, rule: "Hostsniregexp(`^a`)", tree: "HostSNIRegexp(^a)"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.kind, tt.rule)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.rule, err)
			}
			if got := format(r.tree); got != tt.tree {
				t.Errorf("Parse(%q) tree %s, want %s", tt.rule, got, tt.tree)
			}
		})
	}
}

func TestSpellings(t *testing.T) {
	t.Parallel()
	for kind, specs := range map[Kind][]*spec{HTTP: httpSpecs, TCP: tcpSpecs} {
		for _, s := range specs {
			for _, name := range []string{s.name, strings.ToLower(s.name), strings.ToUpper(s.name), title(s.name)} {
				if got, why := lookupSpec(kind, name); got != s {
					t.Errorf("%s %q: %s", kind, name, why)
				}
			}
		}
	}
	for _, name := range []string{"pathPrefix", "hOST", "HOst", "hostRegexp", "Hostregexp_"} {
		if got, _ := lookupSpec(HTTP, name); got != nil && got.name != "HostRegexp" {
			t.Errorf("HTTP %q accepted as %s", name, got.name)
		}
	}
	if got, _ := lookupSpec(HTTP, "hostRegexp"); got != nil {
		t.Errorf("hostRegexp accepted")
	}
}

func TestDefaultPriority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		kind Kind
		rule string
		want int
	}{
		{desc: "bytes of the text", rule: "Host(`example.org`)", want: 19},
		{desc: "Host star is plain", rule: "Host(`*`)", want: 9},
		{desc: "whitespace counts", rule: " Host(`example.org`) ", want: 21},
		{desc: "UTF-8 bytes count", rule: "Path(`/é`)", want: 11},
		{desc: "regexp longer than host", rule: "HostRegexp(`[a-z]+\\.traefik\\.com`)", want: 34},
		{desc: "TCP ordinary", kind: TCP, rule: "HostSNI(`a.com`)", want: 16},
		{desc: "TCP catch-all", kind: TCP, rule: "HostSNI(`*`)", want: -1},
		{desc: "TCP catch-all spelled", kind: TCP, rule: " ( HOSTSNI(\"*\") ) ", want: -1},
		{desc: "TCP catch-all lower", kind: TCP, rule: "hostsni(`*`)", want: -1},
		{desc: "TCP negated catch-all quirk", kind: TCP, rule: "!HostSNI(`*`)", want: -1},
		{desc: "TCP catch-all twice", kind: TCP, rule: "HostSNI(`*`) || HostSNI(`*`)", want: 28},
		{desc: "TCP catch-all and ALPN", kind: TCP, rule: "HostSNI(`*`) && ALPN(`h2`)", want: 26},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(tt.kind, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.DefaultPriority(); got != tt.want {
				t.Errorf("DefaultPriority(%q) = %d, want %d", tt.rule, got, tt.want)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		rule string
		off  []int
	}{
		{desc: "plain host", rule: "Host(`a.com`)"},
		{desc: "IPv6 host", rule: "Host(`10::10`)"},
		{desc: "host with port", rule: "Host(`a.com:8080`)", off: []int{5}},
		{desc: "IPv6 brackets", rule: "Host(`[10::10]`)", off: []int{5}},
		{desc: "IPv6 brackets and port", rule: "Host(`[10::10]:443`)", off: []int{5}},
		{desc: "glued wildcard", rule: "Path(`/`) || Host(`*foo.com`)", off: []int{18}},
		{desc: "wildcard", rule: "Host(`*.foo.com`) || Host(`*`)"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(HTTP, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, w := range r.Warnings() {
				got = append(got, w.Offset)
			}
			if len(got) != len(tt.off) || (len(got) > 0 && got[0] != tt.off[0]) {
				t.Errorf("Warnings(%q) at %v, want %v", tt.rule, got, tt.off)
			}
		})
	}
}
