package rule

import (
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// render prints a tree back as rule text, for the round-trip property.
func render(n *node) string {
	switch n.op {
	case opAnd:
		return "(" + render(n.left) + " && " + render(n.right) + ")"
	case opOr:
		return "(" + render(n.left) + " || " + render(n.right) + ")"
	}
	args := make([]string, len(n.leaf.args))
	for i, a := range n.leaf.args {
		args[i] = strconv.Quote(a)
	}
	s := n.leaf.spec.name + "(" + strings.Join(args, ", ") + ")"
	if n.leaf.not {
		s = "!" + s
	}
	return s
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"Host(`a.com`) && PathPrefix(`/api`)", "!(Host(`a`) || !Path(`/b`))", "Host(`a`) &&", "Host('a')",
		"Query(`a`,`b`,`c`)", "HostRegexp(\"^a\\\\.com$\")", "Host(`a`,) /* c */ // d\n", "HostSNI(`*`)",
		"ALPN(`h2`) || HostSNIRegexp(`^x`)", "ClientIP(`10.0.0.0/8`)", "Host(`a`)\n&& Path(`/`)", "",
		"Header(`X`, \"\\u00e9\")", "Host(`*foo.com:80`)", "a.b(`x`)", "Host((`a`))", "PathRegexp(`(`)",
	} {
		f.Add(uint8(0), s)
		f.Add(uint8(1), s)
	}
	f.Fuzz(func(t *testing.T, k uint8, text string) {
		kind := Kind(k % 2)
		r, err := Parse(kind, text)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error", err)
			}
			if e.Offset < 0 || e.Offset > len(text) {
				t.Fatalf("Parse(%q) error offset %d out of [0,%d]", text, e.Offset, len(text))
			}
			return
		}
		if r.Text() != text || r.Kind() != kind {
			t.Fatalf("Text/Kind changed")
		}
		if p := r.DefaultPriority(); p != len(text) && p != -1 {
			t.Fatalf("DefaultPriority %d", p)
		}
		for _, w := range r.Warnings() {
			if w.Offset < 0 || w.Offset > len(text) {
				t.Fatalf("warning offset %d out of range", w.Offset)
			}
		}
		again, err := Parse(kind, r.Text())
		if err != nil || format(again.tree) != format(r.tree) {
			t.Fatalf("re-parse of %q: %v", text, err)
		}
		canon := render(r.tree)
		back, err := Parse(kind, canon)
		if err != nil || format(back.tree) != format(r.tree) {
			t.Fatalf("rendered %q of %q does not parse back: %v", canon, text, err)
		}
	})
}

func FuzzTable(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(seed, uint8(10))
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		checkIndexed(t, seed, 1+int(n%64))
	})
}

// FuzzQuery compares the in-place query scan with url.ParseQuery.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"a=b", "a=b&a=c", "a", "a=", "q=a+b", "a%20b=1", "a=%zz&a=b", "a=b;c", "=x", "&&a&"} {
		f.Add(s, "a", "b")
	}
	f.Fuzz(func(t *testing.T, raw, key, value string) {
		vals, _ := url.ParseQuery(raw)
		want := slices.Contains(vals[key], value)
		q := &queryMatcher{key: key, value: value}
		if got := q.match(raw); got != want {
			t.Fatalf("Query(%q, %q) on %q = %v, want %v", key, value, raw, got, want)
		}
	})
}

// FuzzRegexpPrefilter checks that the literal prefilter never rejects a
// string the regexp matches.
func FuzzRegexpPrefilter(f *testing.F) {
	for _, s := range []string{`^[a-z]+\.example\.com$`, `(foo|bar)baz`, `a+bc{2,}`, `(?i)abc`, `x*yz`, `\x{fffd}q`} {
		f.Add(s, "foo.example.com")
	}
	f.Fuzz(func(t *testing.T, expr, s string) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		m := &matchRE{re: re, lit: requiredLiteral(expr)}
		if got, want := m.match(s), re.MatchString(s); got != want {
			t.Fatalf("%q on %q: prefilter %q gives %v, regexp %v", expr, s, m.lit, got, want)
		}
	})
}

// FuzzNormalizePath checks that normalisation is stable and that the
// routing path is the one of the clean path.
func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/a/../b", "//a", "/%2e%2E/x", "/a%2fb/", "/a#b", "*", "/%zz", "/a/./b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		clean, routing, ok := NormalizePath(in)
		if !ok {
			return
		}
		if routing != RoutingPath(clean) {
			t.Fatalf("routing %q != RoutingPath(%q)", routing, clean)
		}
		again, _, ok := NormalizePath(clean)
		if !ok || again != clean {
			t.Fatalf("NormalizePath(%q) = %q, then %q (ok %v)", in, clean, again, ok)
		}
	})
}
