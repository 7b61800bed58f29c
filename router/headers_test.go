package router

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

func TestHopByHop(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, k := range []string{"Keep-Alive", "X-Conn-Listed", "Proxy-Connection", "Te", "X-Plain", "Upgrade", "Http2-Settings"} {
			w.Header().Set("X-Got-"+k, strings.Join(r.Header[k], ","))
		}
		w.Header().Set("Connection", "X-Resp-Listed")
		w.Header().Set("X-Resp-Listed", "1")
		w.Header().Set("Keep-Alive", "timeout=5")
	}))
	t.Cleanup(up.Close)
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "u")},
	}
	_, fe := front(t, cfg, Options{})
	req := newReq(t, "GET", fe.URL+"/", "Connection", "X-Conn-Listed, HTTP2-Settings, Upgrade", "X-Conn-Listed", "1",
		"Keep-Alive", "300", "Proxy-Connection", "keep-alive", "Te", "gzip", "X-Plain", "p",
		"Upgrade", "h2c", "HTTP2-Settings", "AAMAAABkAAQAAP__")
	resp, _ := do(t, nil, req)
	want := map[string]string{
		"X-Got-Keep-Alive": "", "X-Got-X-Conn-Listed": "", "X-Got-Proxy-Connection": "", "X-Got-Te": "",
		"X-Got-X-Plain": "p", "X-Got-Upgrade": "", "X-Got-Http2-Settings": "", "X-Resp-Listed": "", "Keep-Alive": "",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	a := backend(t, "a")
	ups := []conf.Upstream{testUpstream("a", []string{addr(a)})}
	routes := []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")}
	incoming := []string{"Host", "app.example:8443", "X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https",
		"X-Forwarded-Host", "app.example", "Forwarded", "for=203.0.113.9;proto=https", "X-Real-Ip", "203.0.113.9",
		"X_forwarded_for", "6.6.6.6"}
	tests := []struct {
		desc    string
		trusted []string
		want    map[string]string
	}{
		{desc: "untrusted peer: replaced", want: map[string]string{
			"X-Got-X-Forwarded-For":   "127.0.0.1",
			"X-Got-X-Forwarded-Proto": "http",
			"X-Got-X-Forwarded-Host":  "app.example:8443",
			"X-Got-Forwarded":         `for=127.0.0.1;host="app.example:8443";proto=http`,
			"X-Got-X-Real-Ip":         "",
			"X-Got-X_forwarded_for":   "",
		}},
		{desc: "trusted peer: appended", trusted: []string{"127.0.0.0/8"}, want: map[string]string{
			"X-Got-X-Forwarded-For":   "203.0.113.9, 127.0.0.1",
			"X-Got-X-Forwarded-Proto": "https",
			"X-Got-X-Forwarded-Host":  "app.example",
			"X-Got-Forwarded":         `for=203.0.113.9;proto=https, for=127.0.0.1;host="app.example:8443";proto=http`,
			"X-Got-X-Real-Ip":         "203.0.113.9",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := &conf.Config{Listeners: []conf.Listener{testListener(tc.trusted...)}, Upstreams: ups, Routes: routes}
			_, fe := front(t, cfg, Options{})
			resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/", incoming...))
			for k, v := range tc.want {
				if got := strings.Join(resp.Header.Values(k), ","); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestAppendForwarded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, ip, host, proto, want string
	}{
		{desc: "ipv4", ip: "192.0.2.1", host: "example.com", proto: "http", want: "for=192.0.2.1;host=example.com;proto=http"},
		{desc: "ipv6 quoted and bracketed", ip: "2001:db8::1", host: "[2001:db8::2]:8080", proto: "https",
			want: `for="[2001:db8::1]";host="[2001:db8::2]:8080";proto=https`},
		{desc: "quote escaped", ip: "", host: `a"b`, proto: "http", want: `host="a\"b";proto=http`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := string(appendForwarded(nil, tc.ip, tc.host, tc.proto)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestIsForwardingHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key  string
		want bool
	}{
		{"X-Forwarded-For", true}, {"X_forwarded_for", true}, {"Forwarded", true}, {"X-Real-Ip", true},
		{"X-Forwarded-Tls-Client-Cert-Info", true}, {"X-Forwarded", false}, {"X-Custom", false}, {"Accept", false}, {"", false},
	} {
		if got := isForwardingHeader(tc.key); got != tc.want {
			t.Errorf("isForwardingHeader(%q) = %v, want %v", tc.key, got, tc.want)
		}
	}
}
