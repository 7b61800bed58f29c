package routes

import (
	"strings"
	"testing"
)

// matchExpr parses src as a route file and returns the text of the first
// match expression and the errors.
func matchExpr(t *testing.T, src string) (string, []*Directive, ErrorList) {
	t.Helper()
	f, errs := Parse("t.routes", []byte(src), RouteFile)
	if f == nil {
		t.Fatalf("no AST: %v", errs)
	}
	for _, d := range f.Directives {
		if d.Block == nil {
			continue
		}
		for _, c := range d.Block.Directives {
			if c.Name == "match" {
				return c.Args[0].Value, d.Block.Directives, errs
			}
		}
	}
	return "", nil, errs
}

func TestMatchExpressionExtent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
		want string
		next []string // the directives of the block, in order
	}{
		{desc: "one line", src: "route a {\n match Host(`a`)\n to u\n}", want: "Host(`a`)", next: []string{"match", "to"}},
		{desc: "ends at semicolon", src: "route a { match Host(`a`); to u }", want: "Host(`a`)", next: []string{"match", "to"}},
		{desc: "ends at brace", src: "route a { to u; match Host(`a`) }", want: "Host(`a`)", next: []string{"to", "match"}},
		{desc: "ends at comment", src: "route a {\n match Host(`a`) # the host\n to u\n}", want: "Host(`a`)"},
		{desc: "word after call starts a directive", src: "route a { match Host(`a`) && Path(`/`) to u priority 3 }",
			want: "Host(`a`) && Path(`/`)", next: []string{"match", "to", "priority"}},
		{desc: "open parenthesis continues", src: "route a {\n match (Host(`a`)\n\t|| Host(`b`))\n to u\n}",
			want: "(Host(`a`)\n\t|| Host(`b`))", next: []string{"match", "to"}},
		{desc: "trailing operator continues", src: "route a {\n match Host(`a`) &&\n   Path(`/`)\n to u\n}",
			want: "Host(`a`) &&\n   Path(`/`)"},
		{desc: "leading operator continues", src: "route a {\n match Host(`a`)\n   || Host(`b`)\n to u\n}",
			want: "Host(`a`)\n   || Host(`b`)"},
		{desc: "strings hide terminators", src: "route a {\n match Path(`/a;b}#c`) || Header(\"X\", \"a\\\"}\")\n to u\n}",
			want: "Path(`/a;b}#c`) || Header(\"X\", \"a\\\"}\")"},
		{desc: "missing operator stays in the rule", src: "route a {\n match Host(`a`) Path(`/`)\n to u\n}",
			want: "Host(`a`) Path(`/`)"},
		{desc: "go comment inside", src: "route a {\n match Host(`a`) /* x */ && Path(`/`) // end\n to u\n}",
			want: "Host(`a`) /* x */ && Path(`/`)"},
		{desc: "crlf", src: "route a {\r\n match Host(`a`)\r\n to u\r\n}", want: "Host(`a`)"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got, dirs, errs := matchExpr(t, tt.src)
			if len(errs) > 0 {
				t.Fatalf("errors: %v", errs)
			}
			if got != tt.want {
				t.Errorf("expression = %q, want %q", got, tt.want)
			}
			if tt.next != nil {
				var names []string
				for _, d := range dirs {
					names = append(names, d.Name)
				}
				if strings.Join(names, " ") != strings.Join(tt.next, " ") {
					t.Errorf("directives = %v, want %v", names, tt.next)
				}
			}
		})
	}
}

func TestExpressionPosition(t *testing.T) {
	t.Parallel()
	src := "route a {\n  match (Host(`a`)\n    || Host(`b`))\n  to u\n}\n"
	f, errs := Parse("t.routes", []byte(src), RouteFile)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	a := f.Directives[0].Block.Directives[0].Args[0]
	if a.Pos.Line != 2 || a.Pos.Col != 9 || a.End.Line != 3 || a.End.Col != 18 {
		t.Errorf("expression spans %d:%d-%d:%d, want 2:9-3:18", a.Pos.Line, a.Pos.Col, a.End.Line, a.End.Col)
	}
	if src[a.Pos.Offset:a.End.Offset] != a.Value {
		t.Errorf("offsets do not frame the value")
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
		want string
	}{
		{desc: "bare word", src: `not_found_body gone`, want: "gone"},
		{desc: "quoted with escapes", src: `not_found_body "a \"b\"\n\x41\u00e9"`, want: "a \"b\"\nAé"},
		{desc: "raw", src: "not_found_body `a\\n`", want: `a\n`},
		{desc: "hash inside a word", src: `not_found_body a#b # comment`, want: "a#b"},
		{desc: "hash inside a string", src: `not_found_body "a # b"`, want: "a # b"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			f, errs := Parse("t.conf", []byte("listen a {\n"+tt.src+"\n}\n"), MainFile)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := f.Directives[0].Block.Directives[0].Args[0].Value; got != tt.want {
				t.Errorf("value = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLexicalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		src  string
		want []string // "line:col: message prefix"
	}{
		{desc: "unterminated string", src: "listen a {\n  not_found_body \"abc\n}\n",
			want: []string{`2:18: unterminated string`}},
		{desc: "bad escape", src: "listen a {\n  not_found_body \"a\\qb\"\n}\n",
			want: []string{`2:20: invalid escape sequence`}},
		{desc: "unclosed block", src: "listen a {\n  addr :80\n",
			want: []string{`1:10: "{" is never closed`}},
		{desc: "stray close", src: "listen a { addr :80 }\n}\n",
			want: []string{`2:1: unexpected "}" (no block is open)`}},
		{desc: "block without directive", src: "{ addr :80 }\nlisten a { addr :80 }\n",
			want: []string{`1:1: unexpected "{" (expected a directive name before it)`}},
		{desc: "string as directive", src: "listen a {\n  \"addr\" :80\n}\n",
			want: []string{`2:3: expected a directive name, got string "addr"`}},
		{desc: "unterminated string in rule", src: "route a {\n  match Host(`a)\n  to u\n}\n",
			want: []string{`2:14: unterminated string in match expression`}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, errs := Parse("t.conf", []byte(tt.src), MainFile)
			assertErrors(t, errs, tt.want)
		})
	}
}

// assertErrors checks that errs are, in order, at the given line:col with
// messages starting as given.
func assertErrors(t *testing.T, errs ErrorList, want []string) {
	t.Helper()
	var got []string
	for _, e := range errs {
		got = append(got, e.Pos.String()[len(e.Pos.File)+1:]+": "+e.Msg)
	}
	if len(got) != len(want) {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestBraceOnNextLine(t *testing.T) {
	t.Parallel()
	f, errs := Parse("t.conf", []byte("listen a\n{\n  addr :80\n}\n"), MainFile)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if f.Directives[0].Block == nil || len(f.Directives[0].Block.Directives) != 1 {
		t.Fatalf("block not attached: %+v", f.Directives[0])
	}
}
