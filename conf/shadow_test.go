package conf

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// baseShadow has listeners web and api (cleartext) and sec (TLS); the
// routes of a case start at line 6, one a line.
const baseShadow = "listen web { addr :80 }\nlisten api { addr :81 }\nlisten sec { addr :443; protocols tls }\n" +
	"tls { self_signed localhost }\nupstream u { server a:1 }\n"

func TestShadowWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		routes []string
		want   []string // every warning, "line:col: message"
	}{
		{
			desc: "README case",
			routes: []string{
				"route default { match PathPrefix(`/`); listeners web; to u }",
				"route hello { match Path(`/hello`); listeners web; to u }",
			},
			want: []string{`7:1: route "hello" (priority 14) is never reached: route "default" (priority 15) on listener web matches every request it could; give "hello" a priority above 15 or narrow "default"`},
		},
		{
			desc: "catch-all on every listener",
			routes: []string{
				"route default { match PathPrefix(`/`); to u }",
				"route hello { match PathPrefix(`/hello/`) || Path(`/hi`); priority 3; to u }",
			},
			want: []string{`7:1: route "hello" (priority 3) is never reached: route "default" (priority 15) on listeners web, api and sec matches every request it could; give "hello" a priority above 15 or narrow "default"`},
		},
		{
			desc: "catch-all defined later with a higher priority",
			routes: []string{
				"route hello { match Path(`/hello`); to u }",
				"route default { match PathPrefix(`/`); priority 100; to u }",
			},
			want: []string{`6:1: route "hello" (priority 14) is never reached: route "default" (priority 100) on listeners web, api and sec matches every request it could; give "hello" a priority above 100 or narrow "default"`},
		},
		{
			desc: "prefix with a host",
			routes: []string{
				"route api { match Host(`a.com`) && PathPrefix(`/api`); priority 100; to u }",
				"route x { match PathPrefix(`/apix`) && Host(`A.com`); to u }",
			},
			want: []string{`7:1: route "x" (priority 36) is never reached: route "api" (priority 100) on listeners web, api and sec matches every request it could; give "x" a priority above 100 or narrow "api"`},
		},
		{
			desc: "identical rules, the first defined wins",
			routes: []string{
				"route a { match Header(`X-Tenant`, `1`); to u }",
				"route b { match Header(`x-tenant`, `1`); to u }",
			},
			want: []string{`7:1: route "b" (priority 23) is never reached: route "a" (priority 23) on listeners web, api and sec matches every request it could; give "b" a priority above 23 or narrow "a"`},
		},
		{
			desc: "only OPTIONS * reaches it",
			routes: []string{
				"route default { match PathPrefix(`/`); to u }",
				"route io { match Host(`a.io`); to u }",
			},
			want: []string{`7:1: route "io" (priority 12) is never reached (but by "OPTIONS *" requests): route "default" (priority 15) on listeners web, api and sec matches every other request it could; give "io" a priority above 15 or narrow "default"`},
		},
		{
			desc: "hidden on some listeners",
			routes: []string{
				"route default { match PathPrefix(`/`); listeners web sec; to u }",
				"route hello { match Path(`/hello`); to u }",
			},
			want: []string{`7:1: route "hello" (priority 14) is never reached on listeners web and sec: route "default" (priority 15) on listeners web and sec matches every request it could; give "hello" a priority above 15, narrow "default", or serve "hello" on its other listeners only`},
		},
		{
			desc: "hidden by a route per listener",
			routes: []string{
				"route w { match PathPrefix(`/`); listeners web; to u }",
				"route a { match PathPrefix(`/x`); priority 20; listeners api; to u }",
				"route hello { match Path(`/x`); listeners web api; to u }",
			},
			want: []string{`8:1: route "hello" (priority 10) is never reached: route "a" (priority 20) on listener api and route "w" (priority 15) on listener web match every request it could; give "hello" a priority above 20 or narrow "a" and "w"`},
		},
		{
			desc: "contradictions",
			routes: []string{
				"route h { match Host(`a`) && Host(`b`); to u }",
				"route p { match Path(`/a`) && Path(`/b`); to u }",
				"route m { match Method(`GET`) && Method(`POST`); to u }",
			},
			want: []string{
				"6:35: route \"h\" can never match: Host(`a`) and Host(`b`) cannot both match one request",
				"7:36: route \"p\" can never match: Path(`/a`) and Path(`/b`) cannot both match one request",
				"8:41: route \"m\" can never match: Method(`GET`) and Method(`POST`) cannot both match one request",
			},
		},
		{
			desc: "tcp routes",
			routes: []string{
				"tcp route all { match HostSNI(`*`); priority 100; to u }",
				"tcp route one { match HostSNI(`a.com`); to u }",
			},
			want: []string{`7:1: tcp route "one" (priority 16) is never reached: tcp route "all" (priority 100) on listener sec matches every connection it could; give "one" a priority above 100 or narrow "all"`},
		},
		{
			desc: "tcp contradiction",
			routes: []string{
				"tcp route two { match HostSNI(`a.com`) && HostSNI(`b.com`); to u }",
			},
			want: []string{"6:51: tcp route \"two\" can never match: HostSNI(`a.com`) and HostSNI(`b.com`) cannot both match one request"},
		},
		// No warning.
		{desc: "different hosts", routes: []string{
			"route a { match Host(`a.com`) && PathPrefix(`/`); priority 100; to u }",
			"route b { match Host(`b.com`) && Path(`/x`); to u }",
		}},
		{desc: "different listeners", routes: []string{
			"route default { match PathPrefix(`/`); listeners web; to u }",
			"route hello { match Path(`/hello`); listeners api sec; to u }",
		}},
		{desc: "later route with a higher explicit priority", routes: []string{
			"route default { match PathPrefix(`/`); to u }",
			"route hello { match Path(`/hello`); priority 16; to u }",
		}},
		{desc: "catch-all with a low priority", routes: []string{
			"route default { match PathPrefix(`/`); priority 1; to u }",
			"route hello { match Path(`/hello`); to u }",
		}},
		{desc: "prefix is longer than the path", routes: []string{
			"route api { match PathPrefix(`/api`); to u }",
			"route ap { match Path(`/ap`); to u }",
		}},
		{desc: "header-conditioned earlier route", routes: []string{
			"route canary { match PathPrefix(`/`) && Header(`X-Canary`, `1`); to u }",
			"route hello { match Path(`/hello`); to u }",
		}},
		{desc: "method-conditioned earlier route", routes: []string{
			"route get { match PathPrefix(`/`) && Method(`GET`); to u }",
			"route hello { match Path(`/hello`); to u }",
		}},
		{desc: "host-conditioned earlier route", routes: []string{
			"route a { match Host(`a.com`) && PathPrefix(`/`); to u }",
			"route hello { match Path(`/hello`); to u }",
		}},
		{desc: "regexp is not everything", routes: []string{
			"route re { match PathRegexp(`.*`); priority 100; to u }",
			"route hello { match Path(`/hello`); to u }",
		}},
		{desc: "negated earlier route", routes: []string{
			"route not { match !Path(`/hello`); priority 100; to u }",
			"route hello { match Path(`/hello`); to u }",
		}},
		{desc: "one alternative still reached", routes: []string{
			"route a { match PathPrefix(`/a`); priority 100; to u }",
			"route ab { match Path(`/a/1`) || Path(`/b`); to u }",
		}},
		{desc: "contradictory earlier route", routes: []string{
			"route never { match Path(`/a`) && Path(`/b`); priority 100; to u }",
			"route a { match Path(`/a`); to u }",
		}, want: []string{"6:40: route \"never\" can never match: Path(`/a`) and Path(`/b`) cannot both match one request"}},
		{desc: "tcp catch-all keeps its default priority", routes: []string{
			"tcp route all { match HostSNI(`*`); to u }",
			"tcp route one { match HostSNI(`a.com`); to u }",
		}},
		{desc: "http and tcp routes apart", routes: []string{
			"tcp route all { match HostSNI(`*`); priority 100; to u }",
			"route default { match ClientIP(`10.0.0.0/8`); to u }",
			"route hello { match ClientIP(`10.0.0.0/8`) && Path(`/x`); priority 1; to u }",
		}, want: []string{`8:1: route "hello" (priority 1) is never reached: route "default" (priority 22) on listeners web, api and sec matches every request it could; give "hello" a priority above 22 or narrow "default"`}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, baseShadow+strings.Join(tt.routes, "\n")+"\n")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cfg.Warnings {
				got = append(got, fmt.Sprintf("%d:%d: %s", w.Pos.Line, w.Pos.Col, w.Msg))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestShadowCandidatesBounded loads many alike broad routes, which the
// index cannot tell apart (negated calls only): each is compared with a
// bounded number of earlier routes, and a shadow right behind its cover
// is still found.
func TestShadowCandidatesBounded(t *testing.T) {
	t.Parallel()
	var src strings.Builder
	src.WriteString(baseShadow)
	src.WriteString("route a { match Path(`/a`); priority 60; to u }\nroute b { match Path(`/a`); priority 60; to u }\n")
	for i := range 2000 {
		fmt.Fprintf(&src, "route n%d { match !Header(`X`, `%d`); priority 50; to u }\n", i, i)
	}
	cfg, err := loadString(t, src.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0].Msg, `route "b" (priority 60) is never reached: route "a"`) {
		t.Errorf("warnings: %v", cfg.Warnings[:min(3, len(cfg.Warnings))])
	}
}
