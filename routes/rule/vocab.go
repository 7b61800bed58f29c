package rule

import (
	"fmt"
	"strings"
)

// httpFn and tcpFn are compiled matchers: a rule becomes a tree of them.
type (
	httpFn func(*HTTPRequest) bool
	tcpFn  func(*TCPHello) bool
)

// arg is one string argument of a matcher call: its unquoted value and the
// byte offset of its literal in the rule text.
type arg struct {
	val string
	off int
}

// spec describes one matcher: its canonical name, how many arguments it
// takes and how to build it. Exactly one of http and tcp is set.
type spec struct {
	name     string
	min, max int
	http     func(p *parser, args []arg) (httpFn, *Error)
	tcp      func(p *parser, args []arg) (tcpFn, *Error)
}

// The two vocabularies (§1.2), one table each, as Traefik's httpFuncs and
// tcpFuncs.
var (
	httpSpecs = []*spec{
		{name: "Host", min: 1, max: 1, http: buildHost},
		{name: "HostRegexp", min: 1, max: 1, http: buildHostRegexp},
		{name: "Path", min: 1, max: 1, http: buildPath},
		{name: "PathPrefix", min: 1, max: 1, http: buildPathPrefix},
		{name: "PathRegexp", min: 1, max: 1, http: buildPathRegexp},
		{name: "Method", min: 1, max: 1, http: buildMethod},
		{name: "Header", min: 2, max: 2, http: buildHeader},
		{name: "HeaderRegexp", min: 2, max: 2, http: buildHeaderRegexp},
		{name: "Query", min: 1, max: 2, http: buildQuery},
		{name: "QueryRegexp", min: 1, max: 2, http: buildQueryRegexp},
		{name: "ClientIP", min: 1, max: 1, http: buildClientIPHTTP},
		{name: "ClientCertSubject", min: 1, max: 1, http: buildClientCertSubject},
		{name: "ClientCertSAN", min: 1, max: 1, http: buildClientCertSAN},
		{name: "ClientCertFingerprint", min: 1, max: 1, http: buildClientCertFingerprint},
		{name: "JWTClaim", min: 3, max: 3, http: buildJWTClaim},
	}
	tcpSpecs = []*spec{
		{name: "HostSNI", min: 1, max: 1, tcp: buildHostSNI},
		{name: "HostSNIRegexp", min: 1, max: 1, tcp: buildHostSNIRegexp},
		{name: "ClientIP", min: 1, max: 1, tcp: buildClientIPTCP},
		{name: "ALPN", min: 1, max: 1, tcp: buildALPN},
	}
	httpNames = spellings(httpSpecs)
	tcpNames  = spellings(tcpSpecs)
)

// spellings registers each matcher under its four accepted spellings:
// canonical, lower, UPPER and Title.
func spellings(specs []*spec) map[string]*spec {
	m := make(map[string]*spec, 4*len(specs))
	for _, s := range specs {
		lower := strings.ToLower(s.name)
		m[s.name] = s
		m[lower] = s
		m[strings.ToUpper(s.name)] = s
		m[strings.ToUpper(lower[:1])+lower[1:]] = s
	}
	return m
}

// lookupSpec finds the matcher called name in kind's vocabulary, or explains
// why there is none.
func lookupSpec(kind Kind, name string) (*spec, string) {
	names, specs, other, otherKind := httpNames, httpSpecs, tcpNames, TCP
	if kind == TCP {
		names, specs, other, otherKind = tcpNames, tcpSpecs, httpNames, HTTP
	}
	if s, ok := names[name]; ok {
		return s, ""
	}
	for _, s := range specs {
		if strings.EqualFold(s.name, name) {
			return nil, fmt.Sprintf("unknown matcher %q (did you mean %s? only %s, %s, %s and %s are accepted)",
				name, s.name, s.name, strings.ToLower(s.name), strings.ToUpper(s.name), title(s.name))
		}
	}
	for n, s := range other {
		if strings.EqualFold(n, name) {
			return nil, fmt.Sprintf("unknown matcher %q: %s is a %s matcher, not available in %s rules",
				name, s.name, otherKind, kind)
		}
	}
	switch strings.ToLower(name) {
	case "headers", "headersregexp", "hostheader":
		return nil, fmt.Sprintf("unknown matcher %q: it existed in Traefik v2 only; use Header, HeaderRegexp or Host", name)
	}
	return nil, fmt.Sprintf("unknown matcher %q; expected one of %s", name, vocabulary(specs))
}

func title(name string) string {
	lower := strings.ToLower(name)
	return strings.ToUpper(lower[:1]) + lower[1:]
}

func vocabulary(specs []*spec) string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// arity describes how many arguments s takes, for error messages.
func (s *spec) arity() string {
	switch {
	case s.min == s.max && s.min == 1:
		return "1 argument"
	case s.min == s.max:
		return fmt.Sprintf("%d arguments", s.min)
	}
	return fmt.Sprintf("%d or %d arguments", s.min, s.max)
}
