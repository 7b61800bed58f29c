package router

import (
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

func TestRewritePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		mws  []conf.Middleware
		in   string
		want string
	}{
		{desc: "strip", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/api"}}, in: "/api/v1", want: "/v1"},
		{desc: "strip all", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/api"}}, in: "/api", want: "/"},
		{desc: "strip not segment aware", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/api"}}, in: "/apiv2", want: "/v2"},
		{desc: "strip no match", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/api"}}, in: "/web", want: "/web"},
		{desc: "strip leaves no dot-dot", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}, {Kind: conf.AddPrefix, Arg: "/static"}}, in: "/pub../secret", want: "/static/secret"},
		{desc: "strip leaves no dot", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}}, in: "/pub./.././x", want: "/x"},
		{desc: "strip to dot-dot only", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}}, in: "/pub..", want: "/"},
		{desc: "strip leaves no dot-dot before an encoded slash", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}, {Kind: conf.AddPrefix, Arg: "/static"}}, in: "/pub..%2fx", want: "/static/x"},
		{desc: "strip leaves no dot-dot before a backslash", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}}, in: "/pub..\\x", want: "/x"},
		{desc: "strip keeps dot names", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}}, in: "/pub/.well-known/x", want: "/.well-known/x"},
		{desc: "strip keeps dotted segment", mws: []conf.Middleware{{Kind: conf.StripPrefix, Arg: "/pub"}}, in: "/pub...x", want: "/...x"},
		{desc: "add", mws: []conf.Middleware{{Kind: conf.AddPrefix, Arg: "/v2/"}}, in: "/x", want: "/v2/x"},
		{desc: "add root", mws: []conf.Middleware{{Kind: conf.AddPrefix, Arg: "/"}}, in: "/x", want: "/x"},
		{desc: "add no slash", mws: []conf.Middleware{{Kind: conf.AddPrefix, Arg: "v2"}}, in: "/", want: "/v2/"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			c, err := compileChain(tc.mws)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.rewritePath(tc.in); got != tc.want {
				t.Errorf("rewritePath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedirectLocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, target, path, query, want string
	}{
		{desc: "path", target: "https://example.com$path", path: "/a", want: "https://example.com/a"},
		{desc: "query appended", target: "https://example.com$path", path: "/a", query: "x=1", want: "https://example.com/a?x=1"},
		{desc: "query appended with &", target: "https://e.com/?s=1", path: "/a", query: "x=1", want: "https://e.com/?s=1&x=1"},
		{desc: "explicit query", target: "https://e.com$path?$query&v=2", path: "/a", query: "x=1", want: "https://e.com/a?x=1&v=2"},
		{desc: "dollar kept", target: "https://e.com/$x", path: "/a", want: "https://e.com/$x"},
		{desc: "empty query after ?", target: "https://e.com$path?$query", path: "/a", want: "https://e.com/a"},
		{desc: "empty query after &", target: "https://e.com/n?x=1&$query", path: "/a", want: "https://e.com/n?x=1"},
		{desc: "empty query, parameters after", target: "https://e.com$path?$query&v=2", path: "/a", want: "https://e.com/a?v=2"},
		{desc: "empty query mid-string", target: "https://e.com/?$query#top", path: "/a", want: "https://e.com/#top"},
		{desc: "query after ?", target: "https://e.com/n?x=1&$query", path: "/a", query: "z=9", want: "https://e.com/n?x=1&z=9"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a, err := newRedirect(308, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(a.location(nil, tc.path, tc.query)); got != tc.want {
				t.Errorf("location = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := newRedirect(200, "/x"); err == nil {
		t.Error("redirect 200 accepted")
	}
}

// FuzzRedirectLocation checks that expansion never panics, keeps a
// target without variables as is (plus the query rule) and puts the path
// wherever $path was written.
func FuzzRedirectLocation(f *testing.F) {
	f.Add("https://e.com$path$query$", "b=1")
	f.Add("https://e.com/?a=1", "b=2")
	f.Fuzz(func(t *testing.T, target, query string) {
		a, err := newRedirect(302, target)
		if err != nil {
			t.Fatal(err)
		}
		const path = "\x00path\x00"
		loc := string(a.location(nil, path, query))
		if !strings.Contains(target, "$") {
			want := target
			if query != "" {
				sep := "?"
				if strings.Contains(target, "?") {
					sep = "&"
				}
				want += sep + query
			}
			if loc != want {
				t.Errorf("location(%q) = %q, want %q", target, loc, want)
			}
		}
		if strings.Contains(target, "$path") && !strings.Contains(loc, path) {
			t.Errorf("location(%q) = %q lost the path", target, loc)
		}
	})
}
