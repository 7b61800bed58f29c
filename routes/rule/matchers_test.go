package rule

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// hdr is a HeaderGetter over canonical names, as http.Header is.
type hdr map[string][]string

func (h hdr) Values(name string) []string { return h[name] }

func TestHTTPMatchers(t *testing.T) {
	t.Parallel()
	ip := netip.MustParseAddr
	tests := []struct {
		desc string
		rule string
		req  HTTPRequest
		want bool
	}{
		// §4.1 Host
		{desc: "host exact", rule: "Host(`a.com`)", req: HTTPRequest{Host: "a.com"}, want: true},
		{desc: "host other", rule: "Host(`a.com`)", req: HTTPRequest{Host: "b.com"}},
		{desc: "host rule upper-case", rule: "Host(`A.COM`)", req: HTTPRequest{Host: "a.com"}, want: true},
		{desc: "host request upper-case", rule: "Host(`a.com`)", req: HTTPRequest{Host: "A.Com"}, want: true},
		{desc: "host empty never matches", rule: "Host(`a.com`)", req: HTTPRequest{}},
		{desc: "host star matches empty", rule: "Host(`*`)", req: HTTPRequest{}, want: true},
		{desc: "host star matches any", rule: "Host(`*`)", req: HTTPRequest{Host: "x.y.z"}, want: true},
		{desc: "wildcard one label", rule: "Host(`*.example.com`)", req: HTTPRequest{Host: "a.example.com"}, want: true},
		{desc: "wildcard upper-case", rule: "Host(`*.Example.com`)", req: HTTPRequest{Host: "A.EXAMPLE.com"}, want: true},
		{desc: "wildcard two labels", rule: "Host(`*.example.com`)", req: HTTPRequest{Host: "a.b.example.com"}},
		{desc: "wildcard apex", rule: "Host(`*.example.com`)", req: HTTPRequest{Host: "example.com"}},
		{desc: "wildcard trailing dot request", rule: "Host(`*.example.com`)", req: HTTPRequest{Host: "a.example.com."}, want: true},
		{desc: "wildcard trailing dot rule", rule: "Host(`*.example.com.`)", req: HTTPRequest{Host: "a.example.com"}, want: true},
		{desc: "glued wildcard never matches", rule: "Host(`*foo.com`)", req: HTTPRequest{Host: "afoo.com"}},
		{desc: "glued wildcard never matches label", rule: "Host(`*foo.com`)", req: HTTPRequest{Host: "a.foo.com"}},
		{desc: "trailing dot rule", rule: "Host(`example.com.`)", req: HTTPRequest{Host: "example.com"}, want: true},
		{desc: "trailing dot request", rule: "Host(`example.com`)", req: HTTPRequest{Host: "example.com."}, want: true},
		{desc: "trailing dot both", rule: "Host(`example.com.`)", req: HTTPRequest{Host: "example.com."}, want: true},
		{desc: "two trailing dots", rule: "Host(`example.com`)", req: HTTPRequest{Host: "example.com.."}},
		{desc: "port in rule never matches", rule: "Host(`a.com:8080`)", req: HTTPRequest{Host: CanonicalHost("a.com:8080")}},
		{desc: "IPv6 host", rule: "Host(`10::10`)", req: HTTPRequest{Host: CanonicalHost("[10::10]:443")}, want: true},
		{desc: "IPv6 host no port", rule: "Host(`10::10`)", req: HTTPRequest{Host: CanonicalHost("[10::10]")}, want: true},
		{desc: "IPv6 brackets never match", rule: "Host(`[10::10]`)", req: HTTPRequest{Host: CanonicalHost("[10::10]")}},
		{desc: "raw UTF-8 request", rule: "Host(`xn--bcher-kva.de`)", req: HTTPRequest{Host: "bücher.de"}},
		{desc: "Kelvin sign is not k", rule: "Host(`k.com`)", req: HTTPRequest{Host: "\u212a.com"}},
		// HostRegexp
		{desc: "host regexp unanchored", rule: "HostRegexp(`example.com`)", req: HTTPRequest{Host: "notexample.com"}, want: true},
		{desc: "host regexp upper class", rule: "HostRegexp(`^[A-Z]+\\.com$`)", req: HTTPRequest{Host: CanonicalHost("ABC.com")}},
		{desc: "host regexp keeps trailing dot", rule: "HostRegexp(`^a\\.com$`)", req: HTTPRequest{Host: "a.com."}},
		{desc: "host regexp anchored", rule: "HostRegexp(`^[a-z]+\\.traefik\\.com$`)", req: HTTPRequest{Host: "foo.traefik.com"}, want: true},
		{desc: "host regexp case flag", rule: "HostRegexp(`(?i)^A\\.COM$`)", req: HTTPRequest{Host: "a.com"}, want: true},
		{desc: "host regexp v2 placeholder is literal", rule: "HostRegexp(`{sub:[a-z]+}.a.com`)", req: HTTPRequest{Host: "x.a.com"}},
		// Path, PathPrefix, PathRegexp (§3.3)
		{desc: "path exact", rule: "Path(`/a`)", req: HTTPRequest{Path: "/a"}, want: true},
		{desc: "path case-sensitive", rule: "Path(`/a`)", req: HTTPRequest{Path: "/A"}},
		{desc: "path trailing slash", rule: "Path(`/a`)", req: HTTPRequest{Path: "/a/"}},
		{desc: "path decoded space", rule: "Path(`/foo bar`)", req: HTTPRequest{Path: RoutingPath("/foo%20bar")}, want: true},
		{desc: "path encoded slash", rule: "Path(`/a%2Fb`)", req: HTTPRequest{Path: RoutingPath("/a%2Fb")}, want: true},
		{desc: "path encoded slash is no separator", rule: "Path(`/a/b`)", req: HTTPRequest{Path: RoutingPath("/a%2Fb")}},
		{desc: "prefix plain string", rule: "PathPrefix(`/api`)", req: HTTPRequest{Path: "/apiv2"}, want: true},
		{desc: "prefix not segment aware", rule: "PathPrefix(`/products`)", req: HTTPRequest{Path: "/products-for-sale"}, want: true},
		{desc: "prefix with slash", rule: "PathPrefix(`/api/`)", req: HTTPRequest{Path: "/api"}},
		{desc: "prefix root", rule: "PathPrefix(`/`)", req: HTTPRequest{Path: "/anything"}, want: true},
		{desc: "path regexp unanchored", rule: "PathRegexp(`css`)", req: HTTPRequest{Path: "/static/a.css"}, want: true},
		{desc: "path regexp no match", rule: "PathRegexp(`^/api`)", req: HTTPRequest{Path: "/x/api"}},
		{desc: "path regexp brace literal", rule: "PathRegexp(`^/{id}$`)", req: HTTPRequest{Path: "/{id}"}, want: true},
		// Method
		{desc: "method upper-cased rule", rule: "Method(`get`)", req: HTTPRequest{Method: "GET"}, want: true},
		{desc: "method lower-case request", rule: "Method(`GET`)", req: HTTPRequest{Method: "get"}},
		{desc: "method no HEAD for GET", rule: "Method(`GET`)", req: HTTPRequest{Method: "HEAD"}},
		// Header, HeaderRegexp
		{desc: "header exact", rule: "Header(`X-A`, `1`)", req: HTTPRequest{Header: hdr{"X-A": {"1"}}}, want: true},
		{desc: "header name case", rule: "Header(`x-a`, `1`)", req: HTTPRequest{Header: hdr{"X-A": {"1"}}}, want: true},
		{desc: "header value case", rule: "Header(`X-A`, `abc`)", req: HTTPRequest{Header: hdr{"X-A": {"ABC"}}}},
		{desc: "header not comma split", rule: "Header(`X-A`, `a`)", req: HTTPRequest{Header: hdr{"X-A": {"a, b"}}}},
		{desc: "header second field line", rule: "Header(`X-A`, `b`)", req: HTTPRequest{Header: hdr{"X-A": {"a", "b"}}}, want: true},
		{desc: "header absent", rule: "Header(`X-A`, `1`)", req: HTTPRequest{}},
		{desc: "header Host invisible", rule: "Header(`Host`, `a.com`)", req: HTTPRequest{Host: "a.com", Header: hdr{"Host": {"a.com"}}}},
		{desc: "header regexp unanchored", rule: "HeaderRegexp(`X-A`, `b+`)", req: HTTPRequest{Header: hdr{"X-A": {"abbc"}}}, want: true},
		{desc: "header regexp absent", rule: "HeaderRegexp(`X-A`, `^.*$`)", req: HTTPRequest{Header: hdr{"X-B": {"x"}}}},
		{desc: "header regexp empty value", rule: "HeaderRegexp(`X-A`, `^$`)", req: HTTPRequest{Header: hdr{"X-A": {""}}}, want: true},
		// Query, QueryRegexp (§3.4)
		{desc: "query exact", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: "a=b"}, want: true},
		{desc: "query one of values", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: "a=c&a=b"}, want: true},
		{desc: "query value case", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: "a=B"}},
		{desc: "query key case", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: "A=b"}},
		{desc: "query key only empty", rule: "Query(`a`)", req: HTTPRequest{RawQuery: "a"}, want: true},
		{desc: "query key only equals", rule: "Query(`a`)", req: HTTPRequest{RawQuery: "x=1&a="}, want: true},
		{desc: "query key only not present", rule: "Query(`a`)", req: HTTPRequest{RawQuery: "a=x"}},
		{desc: "query plus is space", rule: "Query(`q`, `a b`)", req: HTTPRequest{RawQuery: "q=a+b"}, want: true},
		{desc: "query percent decoded", rule: "Query(`q`, `a&b`)", req: HTTPRequest{RawQuery: "q=a%26b"}, want: true},
		{desc: "query key decoded", rule: "Query(`a b`, `1`)", req: HTTPRequest{RawQuery: "a%20b=1"}, want: true},
		{desc: "query bad escape dropped", rule: "Query(`a`, `b%zz`)", req: HTTPRequest{RawQuery: "a=b%zz"}},
		{desc: "query bad escape elsewhere", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: "a=%zz&a=b"}, want: true},
		{desc: "query semicolon dropped", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: "a=b;c=d"}},
		{desc: "query semicolon normalised", rule: "Query(`a`, `b`)", req: HTTPRequest{RawQuery: NormalizeQuery("c=d;a=b")}, want: true},
		{desc: "query value with equals", rule: "Query(`a`, `b=c`)", req: HTTPRequest{RawQuery: "a=b=c"}, want: true},
		{desc: "query regexp", rule: "QueryRegexp(`a`, `^[0-9]+$`)", req: HTTPRequest{RawQuery: "a=x&a=42"}, want: true},
		{desc: "query regexp decoded", rule: "QueryRegexp(`a`, `x\\+y`)", req: HTTPRequest{RawQuery: "a=x%2By"}, want: true},
		{desc: "query regexp all accepts empty", rule: "QueryRegexp(`a`, `^.*$`)", req: HTTPRequest{RawQuery: "a"}, want: true},
		{desc: "query regexp absent key", rule: "QueryRegexp(`a`, `^.*$`)", req: HTTPRequest{RawQuery: "b=1"}},
		{desc: "query regexp one argument", rule: "QueryRegexp(`a`)", req: HTTPRequest{RawQuery: "a="}, want: true},
		{desc: "query regexp one argument value", rule: "QueryRegexp(`a`)", req: HTTPRequest{RawQuery: "a=1"}},
		// ClientIP (§3.5)
		{desc: "client ip equal", rule: "ClientIP(`1.2.3.4`)", req: HTTPRequest{ClientIP: ip("1.2.3.4")}, want: true},
		{desc: "client ip other", rule: "ClientIP(`1.2.3.4`)", req: HTTPRequest{ClientIP: ip("1.2.3.5")}},
		{desc: "client ip cidr", rule: "ClientIP(`10.0.0.0/8`)", req: HTTPRequest{ClientIP: ip("10.9.8.7")}, want: true},
		{desc: "client ip host bits ignored", rule: "ClientIP(`1.2.3.4/24`)", req: HTTPRequest{ClientIP: ip("1.2.3.200")}, want: true},
		{desc: "client ip mapped peer", rule: "ClientIP(`1.2.3.4`)", req: HTTPRequest{ClientIP: ip("::ffff:1.2.3.4")}, want: true},
		{desc: "client ip mapped rule", rule: "ClientIP(`::ffff:1.2.3.4`)", req: HTTPRequest{ClientIP: ip("1.2.3.4")}, want: true},
		{desc: "client ip mapped cidr", rule: "ClientIP(`::ffff:1.2.3.0/120`)", req: HTTPRequest{ClientIP: ip("1.2.3.9")}, want: true},
		{desc: "client ip zone ignored", rule: "ClientIP(`fe80::1`)", req: HTTPRequest{ClientIP: ip("fe80::1%eth0")}, want: true},
		{desc: "client ip v6 cidr", rule: "ClientIP(`2001:db8::/32`)", req: HTTPRequest{ClientIP: ip("2001:db8::9")}, want: true},
		{desc: "client ip family differs", rule: "ClientIP(`::/0`)", req: HTTPRequest{ClientIP: ip("1.2.3.4")}},
		{desc: "client ip unknown", rule: "ClientIP(`0.0.0.0/0`)", req: HTTPRequest{}},
		// client certificate (edgeway's)
		{desc: "cert subject", rule: "ClientCertSubject(`CN=alice,O=Example`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert subject other", rule: "ClientCertSubject(`CN=alice`)", req: HTTPRequest{ClientCert: testCert}},
		{desc: "cert DNS SAN, any case", rule: "ClientCertSAN(`Alice.Example.com`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert URI SAN", rule: "ClientCertSAN(`spiffe://example.com/alice`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert email SAN", rule: "ClientCertSAN(`alice@example.com`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert IP SAN", rule: "ClientCertSAN(`10.0.0.1`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert SAN other", rule: "ClientCertSAN(`bob.example.com`)", req: HTTPRequest{ClientCert: testCert}},
		{desc: "cert fingerprint", rule: "ClientCertFingerprint(`" + testCertSum + "`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert fingerprint upper case, colons", rule: "ClientCertFingerprint(`" + colons(strings.ToUpper(testCertSum)) + "`)", req: HTTPRequest{ClientCert: testCert}, want: true},
		{desc: "cert fingerprint other", rule: "ClientCertFingerprint(`" + strings.Repeat("0", 64) + "`)", req: HTTPRequest{ClientCert: testCert}},
		{desc: "no cert: subject", rule: "ClientCertSubject(`CN=alice,O=Example`)", req: HTTPRequest{}},
		{desc: "no cert: SAN", rule: "ClientCertSAN(`alice.example.com`)", req: HTTPRequest{}},
		{desc: "no cert: fingerprint", rule: "ClientCertFingerprint(`" + testCertSum + "`)", req: HTTPRequest{}},
		{desc: "no cert: negated", rule: "!ClientCertSAN(`alice.example.com`)", req: HTTPRequest{}, want: true},
		// operators
		{desc: "and", rule: "Host(`a`) && Path(`/b`)", req: HTTPRequest{Host: "a", Path: "/b"}, want: true},
		{desc: "and fails", rule: "Host(`a`) && Path(`/b`)", req: HTTPRequest{Host: "a", Path: "/c"}},
		{desc: "or", rule: "Host(`a`) || Path(`/b`)", req: HTTPRequest{Host: "x", Path: "/b"}, want: true},
		{desc: "not", rule: "!Host(`a`)", req: HTTPRequest{Host: "b"}, want: true},
		{desc: "not De Morgan", rule: "!(Host(`a`) && Path(`/b`))", req: HTTPRequest{Host: "a", Path: "/c"}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(HTTP, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.MatchHTTP(&tt.req); got != tt.want {
				t.Errorf("%s on %+v = %v, want %v", tt.rule, tt.req, got, tt.want)
			}
		})
	}
}

func TestTCPMatchers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		rule string
		h    TCPHello
		want bool
	}{
		{desc: "catch-all on empty SNI", rule: "HostSNI(`*`)", h: TCPHello{}, want: true},
		{desc: "exact", rule: "HostSNI(`a.com`)", h: TCPHello{SNI: "a.com"}, want: true},
		{desc: "empty SNI never matches", rule: "HostSNI(`a.com`)", h: TCPHello{}},
		{desc: "rule upper-case", rule: "HostSNI(`A.Com`)", h: TCPHello{SNI: "a.com"}, want: true},
		{desc: "rule trailing dot", rule: "HostSNI(`a.com.`)", h: TCPHello{SNI: "a.com"}, want: true},
		{desc: "wildcard", rule: "HostSNI(`*.a.com`)", h: TCPHello{SNI: "b.a.com"}, want: true},
		{desc: "wildcard two labels", rule: "HostSNI(`*.a.com`)", h: TCPHello{SNI: "c.b.a.com"}},
		{desc: "wildcard apex", rule: "HostSNI(`*.a.com`)", h: TCPHello{SNI: "a.com"}},
		{desc: "IP as string", rule: "HostSNI(`127.0.0.1`)", h: TCPHello{SNI: "127.0.0.1"}, want: true},
		{desc: "IPv6 as string", rule: "HostSNI(`10::10`)", h: TCPHello{SNI: "10:0::10"}},
		{desc: "regexp matches empty SNI", rule: "HostSNIRegexp(`^.*$`)", h: TCPHello{}, want: true},
		{desc: "regexp unanchored", rule: "HostSNIRegexp(`a\\.com`)", h: TCPHello{SNI: "xa.com"}, want: true},
		{desc: "ALPN offered", rule: "ALPN(`h2`)", h: TCPHello{ALPN: []string{"http/1.1", "h2"}}, want: true},
		{desc: "ALPN case-sensitive", rule: "ALPN(`H2`)", h: TCPHello{ALPN: []string{"h2"}}},
		{desc: "ALPN none", rule: "ALPN(`h2`)", h: TCPHello{}},
		{desc: "client ip", rule: "ClientIP(`10.0.0.0/8`)", h: TCPHello{ClientIP: netip.MustParseAddr("::ffff:10.1.1.1")}, want: true},
		{desc: "negated catch-all", rule: "!HostSNI(`*`)", h: TCPHello{SNI: "a"}},
		{desc: "and", rule: "HostSNI(`a.com`) && ALPN(`h2`)", h: TCPHello{SNI: "a.com", ALPN: []string{"h2"}}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r, err := Parse(TCP, tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.MatchTCP(&tt.h); got != tt.want {
				t.Errorf("%s on %+v = %v, want %v", tt.rule, tt.h, got, tt.want)
			}
		})
	}
}

// testCert is a parsed certificate with a subject and one SAN of each
// kind (only its fields and DER matter to the matchers).
var testCert, testCertSum = func() (*x509.Certificate, string) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	u, _ := url.Parse("spiffe://example.com/alice")
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice", Organization: []string{"Example"}},
		DNSNames: []string{"alice.example.com"}, URIs: []*url.URL{u}, EmailAddresses: []string{"alice@example.com"},
		IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	c, _ := x509.ParseCertificate(der)
	sum := sha256.Sum256(der)
	return c, hex.EncodeToString(sum[:])
}()

// colons writes hex digits in pairs separated by colons.
func colons(h string) string {
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}
