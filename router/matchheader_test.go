package router

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/routes/rule"
)

func TestMatchHeader(t *testing.T) {
	t.Parallel()
	sent := http.Header{"X-Forwarded-Proto": {"https"}, "X-Real-Ip": {"203.0.113.9"},
		"X-Forwarded-For": {"203.0.113.9"}, "X-Custom": {"c"}}
	peer := []string{"192.0.2.1"}
	tests := []struct {
		desc    string
		h       rule.HeaderGetter
		trusted bool
		tls     bool
		realIP  []string
		hide    bool
		want    map[string]string // name -> values joined by ","
	}{
		{desc: "untrusted, sent", h: sent, realIP: peer, hide: true, want: map[string]string{
			"X-Forwarded-Proto": "http", "X-Real-Ip": "192.0.2.1", "X-Forwarded-For": "", "X-Custom": "c"}},
		{desc: "untrusted, absent", h: http.Header{}, realIP: peer, want: map[string]string{
			"X-Forwarded-Proto": "http", "X-Real-Ip": "192.0.2.1", "X-Forwarded-For": ""}},
		{desc: "untrusted over TLS", h: http.Header{}, tls: true, realIP: peer, want: map[string]string{
			"X-Forwarded-Proto": "https"}},
		{desc: "untrusted, peer unknown", h: http.Header{}, want: map[string]string{
			"X-Forwarded-Proto": "http", "X-Real-Ip": ""}},
		{desc: "trusted, sent", h: sent, trusted: true, realIP: peer, want: map[string]string{
			"X-Forwarded-Proto": "https", "X-Real-Ip": "203.0.113.9", "X-Forwarded-For": "203.0.113.9", "X-Custom": "c"}},
		{desc: "trusted, absent", h: http.Header{}, trusted: true, realIP: peer, want: map[string]string{
			"X-Forwarded-Proto": "http", "X-Real-Ip": "192.0.2.1", "X-Forwarded-For": ""}},
		{desc: "nil getter", h: nil, realIP: peer, hide: true, want: map[string]string{
			"X-Forwarded-Proto": "http", "X-Real-Ip": "192.0.2.1", "X-Custom": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			m := newMatchHeader(tc.h, tc.trusted, tc.tls, tc.realIP)
			m.hide = tc.hide
			for name, want := range tc.want {
				if got := strings.Join(m.Values(name), ","); got != want {
					t.Errorf("Values(%q) = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// forwardedRoutes answer with their name: each matches one forwarding
// header value as edgeway should present it to a request from 127.0.0.1.
func forwardedRoutes(t *testing.T) []conf.Route {
	respond := func(name string) conf.Middleware {
		return conf.Middleware{Kind: conf.Respond, Code: 200, Arg: name}
	}
	return []conf.Route{
		testRoute(t, "proto", "Path(`/proto`) && Header(`X-Forwarded-Proto`, `http`)", "", respond("proto")),
		testRoute(t, "realip", "Path(`/ip`) && Header(`X-Real-IP`, `127.0.0.1`)", "", respond("realip")),
		testRoute(t, "xff", "Path(`/xff`) && HeaderRegexp(`X-Forwarded-For`, `.`)", "", respond("xff")),
	}
}

func TestForwardedBeforeMatching(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		trusted []string
		path    string
		hdr     []string
		want    int
	}{
		{desc: "untrusted, proto absent", path: "/proto", want: 200},
		{desc: "untrusted, proto sent", path: "/proto", hdr: []string{"X-Forwarded-Proto", "https"}, want: 200},
		{desc: "trusted, proto absent", trusted: []string{"127.0.0.1/32"}, path: "/proto", want: 200},
		{desc: "trusted, proto sent", trusted: []string{"127.0.0.1/32"}, path: "/proto", hdr: []string{"X-Forwarded-Proto", "https"}, want: 404},
		{desc: "untrusted, real ip absent", path: "/ip", want: 200},
		{desc: "untrusted, real ip sent", path: "/ip", hdr: []string{"X-Real-Ip", "10.9.9.9"}, want: 200},
		{desc: "trusted, real ip absent", trusted: []string{"127.0.0.0/8"}, path: "/ip", want: 200},
		{desc: "trusted, real ip sent", trusted: []string{"127.0.0.0/8"}, path: "/ip", hdr: []string{"X-Real-Ip", "10.9.9.9"}, want: 404},
		{desc: "untrusted, xff sent is stripped", path: "/xff", hdr: []string{"X-Forwarded-For", "10.9.9.9"}, want: 404},
		{desc: "trusted, xff sent is kept", trusted: []string{"127.0.0.0/8"}, path: "/xff", hdr: []string{"X-Forwarded-For", "10.9.9.9"}, want: 200},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := &conf.Config{Listeners: []conf.Listener{testListener(tc.trusted...)}, Routes: forwardedRoutes(t)}
			_, fe := front(t, cfg, Options{})
			resp, _ := do(t, nil, newReq(t, "GET", fe.URL+tc.path, tc.hdr...))
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

func TestMatchHTTPForwarded(t *testing.T) {
	t.Parallel()
	local := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		desc    string
		trusted []string
		path    string
		hdr     http.Header
		ip      netip.Addr
		want    string // route name, "" for no match
	}{
		{desc: "untrusted, proto sent", path: "/proto", hdr: http.Header{"X-Forwarded-Proto": {"https"}}, ip: local, want: "proto"},
		{desc: "trusted, proto sent", trusted: []string{"127.0.0.1/32"}, path: "/proto", hdr: http.Header{"X-Forwarded-Proto": {"https"}}, ip: local},
		{desc: "no header map", path: "/proto", ip: local, want: "proto"},
		{desc: "untrusted, real ip sent", path: "/ip", hdr: http.Header{"X-Real-Ip": {"10.9.9.9"}}, ip: local, want: "realip"},
		{desc: "no client ip", path: "/ip", hdr: http.Header{"X-Real-Ip": {"127.0.0.1"}}},
		{desc: "untrusted, xff hidden", path: "/xff", hdr: http.Header{"X-Forwarded-For": {"10.9.9.9"}}, ip: local},
		{desc: "trusted, xff kept", trusted: []string{"127.0.0.0/8"}, path: "/xff", hdr: http.Header{"X-Forwarded-For": {"10.9.9.9"}}, ip: local, want: "xff"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			s, err := Build(&conf.Config{Listeners: []conf.Listener{testListener(tc.trusted...)}, Routes: forwardedRoutes(t)})
			if err != nil {
				t.Fatal(err)
			}
			req := &rule.HTTPRequest{Method: "GET", Host: "h", Path: tc.path, ClientIP: tc.ip}
			if tc.hdr != nil {
				req.Header = tc.hdr
			}
			got, _, _ := s.MatchHTTP("web", req)
			if got != tc.want {
				t.Errorf("MatchHTTP = %q, want %q", got, tc.want)
			}
		})
	}
}
