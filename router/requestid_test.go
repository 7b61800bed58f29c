package router

import (
	"regexp"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// TestRequestID: the upstream and the client see the same X-Request-Id;
// one from a trusted proxy is kept when valid, any other is replaced by a
// new one, and two requests never share one.
func TestRequestID(t *testing.T) {
	t.Parallel()
	a := backend(t, "a")
	ups := []conf.Upstream{testUpstream("a", []string{addr(a)})}
	routes := []conf.Route{testRoute(t, "all", "PathPrefix(`/`)", "a")}
	tests := []struct {
		desc, sent string
		trusted    []string
		keep       bool
	}{
		{desc: "none sent", keep: false},
		{desc: "untrusted peer", sent: "chosen-by-the-client", keep: false},
		{desc: "trusted peer", sent: "lb-7f3a/42=", trusted: []string{"127.0.0.0/8"}, keep: true},
		{desc: "trusted peer, not visible ASCII", sent: "a b", trusted: []string{"127.0.0.0/8"}, keep: false},
		{desc: "trusted peer, too long", sent: strings.Repeat("x", maxRequestID+1), trusted: []string{"127.0.0.0/8"}, keep: false},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg := &conf.Config{Listeners: []conf.Listener{testListener(tc.trusted...)}, Upstreams: ups, Routes: routes}
			_, fe := front(t, cfg, Options{})
			var hdr []string
			if tc.sent != "" {
				hdr = []string{"X-Request-Id", tc.sent}
			}
			var seen []string
			for range 2 {
				resp, _ := do(t, nil, newReq(t, "GET", fe.URL+"/", hdr...))
				upstream, client := resp.Header.Values("X-Got-X-Request-Id"), resp.Header.Values("X-Request-Id")
				if len(upstream) != 1 || len(client) != 1 || upstream[0] != client[0] {
					t.Fatalf("upstream got %q, client got %q: want one and the same", upstream, client)
				}
				switch id := client[0]; {
				case tc.keep && id != tc.sent:
					t.Errorf("id %q, want the trusted proxy's %q", id, tc.sent)
				case !tc.keep && !generatedID.MatchString(id):
					t.Errorf("id %q, want 32 new hex digits", id)
				}
				seen = append(seen, client[0])
			}
			if !tc.keep && seen[0] == seen[1] {
				t.Errorf("two requests got the same id %q", seen[0])
			}
		})
	}
}
