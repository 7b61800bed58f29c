package rule

import "testing"

func TestCanonicalHost(t *testing.T) {
	t.Parallel()
	tests := []struct{ desc, in, want string }{
		{desc: "plain", in: "a.com", want: "a.com"},
		{desc: "port and case", in: "A.COM:8080", want: "a.com"},
		{desc: "empty port", in: "host:", want: "host"},
		{desc: "IPv4 and port", in: "1.2.3.4:80", want: "1.2.3.4"},
		{desc: "IPv6 and port", in: "[FE80::1]:443", want: "fe80::1"},
		{desc: "IPv6 brackets only", in: "[::1]", want: "::1"},
		{desc: "bare IPv6", in: "fe80::1", want: "fe80::1"},
		{desc: "unsplittable kept", in: "a:b:c]", want: "a:b:c]"},
		{desc: "white space", in: " a.com ", want: "a.com"},
		{desc: "trailing dot kept", in: "a.com.", want: "a.com."},
		{desc: "empty", in: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := CanonicalHost(tt.in); got != tt.want {
				t.Errorf("CanonicalHost(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, in, clean, routing string
		bad                      bool
	}{
		{desc: "unchanged", in: "/a/b", clean: "/a/b", routing: "/a/b"},
		{desc: "root", in: "/", clean: "/", routing: "/"},
		{desc: "empty", in: "", clean: "", routing: ""},
		{desc: "asterisk", in: "*", clean: "*", routing: "*"},
		{desc: "fragment", in: "/a#b", bad: true},
		{desc: "percent at end", in: "/a%", bad: true},
		{desc: "percent one digit", in: "/a%4", bad: true},
		{desc: "percent not hex", in: "/a%zz", bad: true},
		{desc: "unreserved decoded", in: "/%41%7e%2D", clean: "/A~-", routing: "/A~-"},
		{desc: "hex upper-cased", in: "/a%2fb", clean: "/a%2Fb", routing: "/a%2Fb"},
		{desc: "dot-dot", in: "/a/../b", clean: "/b", routing: "/b"},
		{desc: "double slash", in: "//a", clean: "/a", routing: "/a"},
		{desc: "dot", in: "/a/./b", clean: "/a/b", routing: "/a/b"},
		{desc: "leading dot-dot", in: "/../a", clean: "/a", routing: "/a"},
		{desc: "trailing slash kept", in: "/a/b/", clean: "/a/b/", routing: "/a/b/"},
		{desc: "trailing double slash", in: "/a//", clean: "/a/", routing: "/a/"},
		{desc: "trailing dot segment", in: "/a/.", clean: "/a", routing: "/a"},
		{desc: "encoded dot-dot", in: "/a/%2E%2E/b", clean: "/b", routing: "/b"},
		{desc: "encoded slash not a separator", in: "/a/..%2Fb", clean: "/a/..%2Fb", routing: "/a/..%2Fb"},
		{desc: "space decoded for routing", in: "/foo%20bar", clean: "/foo%20bar", routing: "/foo bar"},
		{desc: "encoded slash kept", in: "/foo%2Fbar", clean: "/foo%2Fbar", routing: "/foo%2Fbar"},
		{desc: "braces decoded", in: "/%7Bx%7D", clean: "/%7Bx%7D", routing: "/{x}"},
		{desc: "colon kept", in: "/a%3ab", clean: "/a%3Ab", routing: "/a%3Ab"},
		{desc: "percent kept", in: "/100%25", clean: "/100%25", routing: "/100%25"},
		{desc: "non-UTF-8 byte", in: "/%FF", clean: "/%FF", routing: "/\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			clean, routing, ok := NormalizePath(tt.in)
			if ok == tt.bad || clean != tt.clean || routing != tt.routing {
				t.Errorf("NormalizePath(%q) = %q, %q, %v; want %q, %q, %v", tt.in, clean, routing, ok, tt.clean, tt.routing, !tt.bad)
			}
		})
	}
}

func TestRoutingPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ desc, in, want string }{
		{desc: "no escapes", in: "/a/b", want: "/a/b"},
		{desc: "reserved lower-case hex", in: "/a%2fb", want: "/a%2Fb"},
		{desc: "unreserved", in: "/%61", want: "/a"},
		{desc: "bad escape kept", in: "/a%zz%", want: "/a%zz%"},
		{desc: "not sanitised", in: "/a/../b", want: "/a/../b"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := RoutingPath(tt.in); got != tt.want {
				t.Errorf("RoutingPath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizeQuery(t *testing.T) {
	t.Parallel()
	if got := NormalizeQuery("a=1;b=2&c"); got != "a=1&b=2&c" {
		t.Errorf("NormalizeQuery = %q", got)
	}
}

func TestNormalizeNoAllocs(t *testing.T) {
	for _, in := range []string{"/api/v1/users/42", "/a/b/", "/a%2Fb"} {
		if n := testing.AllocsPerRun(100, func() { NormalizePath(in) }); n != 0 {
			t.Errorf("NormalizePath(%q) allocates %v", in, n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { CanonicalHost("a.example.com:443") }); n != 0 {
		t.Errorf("CanonicalHost allocates %v", n)
	}
}
