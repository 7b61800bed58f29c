package rule

import (
	"net/netip"
	"net/textproto"
	"strings"
)

// The HTTP matchers of §4, one builder each. A builder validates its
// arguments (§2) and returns the closure a request runs.

func buildHost(p *parser, a []arg) (httpFn, *Error) {
	v := a[0].val
	if !isASCII(v) {
		return nil, &Error{Offset: a[0].off, Msg: "Host value " + quote(v) + " has non-ASCII characters; use punycode (xn--...)"}
	}
	v = strings.ToLower(v)
	warnHost(p, a[0], v)
	if v == "*" {
		return func(*HTTPRequest) bool { return true }, nil
	}
	return func(r *HTTPRequest) bool { return hostMatches(r.Host, v) }, nil
}

// warnHost records Host values that Traefik accepts but that never match.
func warnHost(p *parser, a arg, v string) {
	switch {
	case strings.ContainsAny(v, "[]"):
		p.warn(a, "Host value %s can never match: the request host has no IPv6 brackets; write the bare address", quote(v))
	case strings.Contains(v, ":") && !isIP(v):
		p.warn(a, "Host value %s can never match: the request port is stripped before Host is compared", quote(v))
	case v != "*" && v[0] == '*' && !strings.HasPrefix(v, "*."):
		p.warn(a, "Host value %s can never match: a wildcard must be written *.domain", quote(v))
	}
}

func isIP(v string) bool {
	_, err := netip.ParseAddr(v)
	return err == nil
}

// hostMatches is Traefik's Host comparison (§4.1): exact, then without a
// trailing dot on the rule, then without one on the request host.
func hostMatches(reqHost, expr string) bool {
	if reqHost == "" {
		return false
	}
	if domainMatches(reqHost, expr) {
		return true
	}
	if n := len(expr) - 1; n >= 0 && expr[n] == '.' && domainMatches(reqHost, expr[:n]) {
		return true
	}
	n := len(reqHost) - 1
	return reqHost[n] == '.' && domainMatches(reqHost[:n], expr)
}

// domainMatches compares case-insensitively (ASCII only: a request host
// with raw UTF-8 never matches); an expr starting with '*' stands for the
// first label of domain (muxer.DomainMatchHostExpression).
func domainMatches(domain, expr string) bool {
	if expr != "" && expr[0] == '*' {
		return asciiEqualFold(afterFirstLabel(domain), expr[1:])
	}
	return asciiEqualFold(domain, expr)
}

// afterFirstLabel returns domain from its first '.', or "" when it has none.
func afterFirstLabel(domain string) string {
	if i := strings.IndexByte(domain, '.'); i >= 0 {
		return domain[i:]
	}
	return ""
}

func buildHostRegexp(p *parser, a []arg) (httpFn, *Error) {
	if !isASCII(a[0].val) {
		return nil, &Error{Offset: a[0].off, Msg: "HostRegexp value " + quote(a[0].val) + " has non-ASCII characters; use punycode (xn--...)"}
	}
	re, err := p.compileRE("HostRegexp", a[0])
	if err != nil {
		return nil, err
	}
	return func(r *HTTPRequest) bool { return re.match(r.Host) }, nil
}

func checkPath(name string, a arg) *Error {
	if a.val[0] != '/' {
		return &Error{Offset: a.off, Msg: name + ` value must start with "/", got ` + quote(a.val)}
	}
	return nil
}

func buildPath(_ *parser, a []arg) (httpFn, *Error) {
	if err := checkPath("Path", a[0]); err != nil {
		return nil, err
	}
	v := a[0].val
	return func(r *HTTPRequest) bool { return r.Path == v }, nil
}

func buildPathPrefix(_ *parser, a []arg) (httpFn, *Error) {
	if err := checkPath("PathPrefix", a[0]); err != nil {
		return nil, err
	}
	v := a[0].val
	return func(r *HTTPRequest) bool { return strings.HasPrefix(r.Path, v) }, nil
}

func buildPathRegexp(p *parser, a []arg) (httpFn, *Error) {
	re, err := p.compileRE("PathRegexp", a[0])
	if err != nil {
		return nil, err
	}
	return func(r *HTTPRequest) bool { return re.match(r.Path) }, nil
}

func buildMethod(_ *parser, a []arg) (httpFn, *Error) {
	m := strings.ToUpper(a[0].val)
	return func(r *HTTPRequest) bool { return r.Method == m }, nil
}

// headerValues returns the field values of header key; Host is never a
// header for routing (§3.1 step 6), whatever the getter holds.
func headerValues(r *HTTPRequest, key string) []string {
	if r.Header == nil || key == "Host" {
		return nil
	}
	return r.Header.Values(key)
}

func buildHeader(_ *parser, a []arg) (httpFn, *Error) {
	key, v := textproto.CanonicalMIMEHeaderKey(a[0].val), a[1].val
	return func(r *HTTPRequest) bool {
		for _, got := range headerValues(r, key) {
			if got == v {
				return true
			}
		}
		return false
	}, nil
}

func buildHeaderRegexp(p *parser, a []arg) (httpFn, *Error) {
	key := textproto.CanonicalMIMEHeaderKey(a[0].val)
	re, err := p.compileRE("HeaderRegexp", a[1])
	if err != nil {
		return nil, err
	}
	return func(r *HTTPRequest) bool {
		for _, got := range headerValues(r, key) {
			if re.match(got) {
				return true
			}
		}
		return false
	}, nil
}

func buildQuery(_ *parser, a []arg) (httpFn, *Error) {
	q := &queryMatcher{key: a[0].val}
	if len(a) == 2 {
		q.value = a[1].val
	}
	return func(r *HTTPRequest) bool { return q.match(r.RawQuery) }, nil
}

func buildQueryRegexp(p *parser, a []arg) (httpFn, *Error) {
	if len(a) == 1 { // QueryRegexp(k) is Query(k): an empty value
		return buildQuery(p, a)
	}
	re, err := p.compileRE("QueryRegexp", a[1])
	if err != nil {
		return nil, err
	}
	q := &queryMatcher{key: a[0].val, re: re}
	return func(r *HTTPRequest) bool { return q.match(r.RawQuery) }, nil
}

func buildClientIPHTTP(_ *parser, a []arg) (httpFn, *Error) {
	pfx, err := parseClientIP(a[0])
	if err != nil {
		return nil, err
	}
	return func(r *HTTPRequest) bool { return clientIPIn(pfx, r.ClientIP) }, nil
}
