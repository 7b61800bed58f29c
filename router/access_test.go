package router

import (
	"net/netip"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

func mustPrefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// TestRouteAccessLists: a route's deny and allow lists judge the client,
// which behind a trusted proxy is the last X-Forwarded-For address that
// is not a trusted proxy.
func TestRouteAccessLists(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	denyTen := testRoute(t, "deny-ten", "Path(`/deny-ten`)", "a")
	denyTen.Deny = mustPrefixes("10.0.0.0/8")
	allowTen := testRoute(t, "allow-ten", "Path(`/allow-ten`)", "a")
	allowTen.Allow = mustPrefixes("10.0.0.0/8")
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener("127.0.0.0/8")}, // the test client is a trusted proxy
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)})},
		Routes:    []conf.Route{denyTen, allowTen, testRoute(t, "open", "PathPrefix(`/`)", "a")},
	}
	_, fe := front(t, cfg, Options{})
	for _, c := range []struct {
		desc, xff       string
		denied, allowed int // status on /deny-ten and /allow-ten
	}{
		{"the peer itself", "", 200, 403},
		{"a client behind the proxy", "10.1.2.3", 403, 200},
		{"through two trusted proxies", "10.1.2.3, 127.0.0.5", 403, 200},
		{"a spoofed entry left of an untrusted one", "10.1.2.3, 192.0.2.1", 200, 403},
		{"an entry with a port", "10.1.2.3:4711", 403, 200},
		{"garbage to the left", "not-an-ip, 10.1.2.3", 403, 200},
		{"IPv4-mapped", "::ffff:10.1.2.3", 403, 200},
	} {
		var hdr []string
		if c.xff != "" {
			hdr = []string{"X-Forwarded-For", c.xff}
		}
		if r, _ := do(t, nil, newReq(t, "GET", fe.URL+"/deny-ten", hdr...)); r.StatusCode != c.denied {
			t.Errorf("%s: /deny-ten %d, want %d", c.desc, r.StatusCode, c.denied)
		}
		if r, _ := do(t, nil, newReq(t, "GET", fe.URL+"/allow-ten", hdr...)); r.StatusCode != c.allowed {
			t.Errorf("%s: /allow-ten %d, want %d", c.desc, r.StatusCode, c.allowed)
		}
		if r, _ := do(t, nil, newReq(t, "GET", fe.URL+"/other", hdr...)); r.StatusCode != 200 {
			t.Errorf("%s: a route without lists answered %d", c.desc, r.StatusCode)
		}
	}
}

// TestListenerAccessList: a listener's deny list refuses before routing,
// whatever the route; an untrusted peer's X-Forwarded-For is ignored.
func TestListenerAccessList(t *testing.T) {
	t.Parallel()
	up := backend(t, "a")
	l := testListener()
	l.Deny = mustPrefixes("127.0.0.0/8")
	cfg := &conf.Config{
		Listeners: []conf.Listener{l},
		Upstreams: []conf.Upstream{testUpstream("a", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "open", "PathPrefix(`/`)", "a")},
	}
	_, fe := front(t, cfg, Options{})
	r, body := do(t, nil, newReq(t, "GET", fe.URL+"/x", "X-Forwarded-For", "192.0.2.1"))
	if r.StatusCode != 403 || body != "Forbidden\n" {
		t.Errorf("denied client: %d %q, want 403 Forbidden", r.StatusCode, body)
	}
	if r.Header.Get("X-Upstream") != "" {
		t.Error("a denied request reached the upstream")
	}
}

func BenchmarkAccessAdmits(b *testing.B) {
	var ps []netip.Prefix
	for i := range 50000 { // every other /24: 50,000 ranges that do not merge
		j := 2 * i
		ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(j >> 16), byte(j >> 8), byte(j), 0}), 24))
	}
	l := compileAccess(conf.Access{Deny: ps})
	a := netip.MustParseAddr("203.0.113.9")
	b.ReportAllocs()
	for b.Loop() {
		l.admits(a)
	}
}
