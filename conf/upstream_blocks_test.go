package conf

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// TestUpstreamDirectives covers balance, health, outlier, breaker,
// panic_threshold and slow_start: valid values land in the Upstream, an
// invalid one is reported at its line:col.
func TestUpstreamDirectives(t *testing.T) {
	t.Parallel()
	u := func(c *Config) Upstream { return c.Upstreams[0] }
	tests := []struct {
		desc  string
		line  string
		check func(Upstream) bool
		err   string // "line:col: message prefix"
	}{
		{desc: "defaults", line: "", check: func(u Upstream) bool {
			return u.Balance == Balance{Policy: RoundRobin} && u.Health == nil && u.Outlier == nil && u.Breaker == nil &&
				u.PanicThreshold == 50 && u.SlowStart == 0
		}},
		{desc: "least_request", line: "balance least_request", check: func(u Upstream) bool { return u.Balance.Policy == LeastRequest }},
		{desc: "random", line: "balance random", check: func(u Upstream) bool { return u.Balance.Policy == Random }},
		{desc: "hash header", line: "balance hash header X-User", check: func(u Upstream) bool {
			return u.Balance == Balance{Policy: Hash, HashKey: HashHeader, Name: "X-User"}
		}},
		{desc: "hash cookie", line: "balance hash cookie sid", check: func(u Upstream) bool { return u.Balance == Balance{Policy: Hash, HashKey: HashCookie, Name: "sid"} }},
		{desc: "hash client_ip", line: "balance hash client_ip", check: func(u Upstream) bool { return u.Balance == Balance{Policy: Hash, HashKey: HashClientIP} }},
		{desc: "hash path then directive", line: "balance hash path slow_start 10s", check: func(u Upstream) bool {
			return u.Balance == Balance{Policy: Hash, HashKey: HashPath} && u.SlowStart == 10*time.Second
		}},
		{desc: "sticky", line: "balance sticky edgeway_srv", check: func(u Upstream) bool { return u.Balance == Balance{Policy: Sticky, Name: "edgeway_srv"} }},
		{desc: "balance unknown", line: "balance fastest", err: `4:11: unknown balance policy "fastest" (expected round_robin, least_request, random, hash, sticky)`},
		{desc: "hash no key", line: "balance hash", err: `4:15: expected header NAME, cookie NAME, client_ip or path after "balance hash"`},
		{desc: "hash bad key", line: "balance hash body", err: `4:16: unknown hash key "body"`},
		{desc: "hash header no name", line: "balance hash header", err: `4:22: expected round_robin|least_request|random|hash KEY|sticky COOKIE after "balance"`},
		{desc: "sticky no cookie", line: "balance sticky", err: `4:17: expected a cookie name after "balance sticky"`},
		{desc: "sticky bad cookie", line: `balance sticky "a b"`, err: `4:18: invalid sticky cookie name "a b"`},
		{desc: "panic_threshold", line: "panic_threshold 30%", check: func(u Upstream) bool { return u.PanicThreshold == 30 }},
		{desc: "panic_threshold off", line: "panic_threshold off", check: func(u Upstream) bool { return u.PanicThreshold == 0 }},
		{desc: "panic_threshold bad", line: "panic_threshold 150%", err: `4:19: panic_threshold: 150% is out of range (expected 0% to 100%)`},
		{desc: "panic_threshold word", line: "panic_threshold half", err: `4:19: panic_threshold: invalid percentage "half"`},
		{desc: "slow_start", line: "slow_start 30s", check: func(u Upstream) bool { return u.SlowStart == 30*time.Second }},
		{desc: "slow_start off", line: "slow_start off", check: func(u Upstream) bool { return u.SlowStart == 0 }},
		{desc: "slow_start bad", line: "slow_start soon", err: `4:14: slow_start: invalid duration "soon"`},
		{desc: "health defaults", line: "health { }", check: func(u Upstream) bool { return reflect.DeepEqual(*u.Health, DefaultHealthCheck()) }},
		{desc: "health full", line: "health { type http; path /healthz; method HEAD; host api.internal; expect 200-299 304; body \"ok\"; interval 10s; jitter 20%; timeout 1s; healthy 1; unhealthy 2; initial healthy }",
			check: func(u Upstream) bool {
				return reflect.DeepEqual(*u.Health, HealthCheck{Type: "http", Path: "/healthz", Method: "HEAD", Host: "api.internal",
					Expect: []StatusRange{{200, 299}, {304, 304}}, Body: "ok", Interval: 10 * time.Second, Jitter: 20,
					Timeout: time.Second, Healthy: 1, Unhealthy: 2, InitialHealthy: true})
			}},
		{desc: "health one line", line: "health { path /healthz  interval 5s  timeout 1s  healthy 2  unhealthy 3 }", check: func(u Upstream) bool {
			return u.Health.Path == "/healthz" && u.Health.Timeout == time.Second && u.Health.Unhealthy == 3
		}},
		{desc: "health tcp", line: "health { type tcp }", check: func(u Upstream) bool { return u.Health.Type == "tcp" }},
		{desc: "health bad type", line: "health { type udp }", err: `4:17: unknown health check type "udp" (expected http, tcp)`},
		{desc: "health bad expect", line: "health { expect 299-200 }", err: `4:19: expect: invalid status range "299-200"`},
		{desc: "health bad path", line: "health { path healthz }", err: `4:17: path: "healthz" must start with /`},
		{desc: "health jitter too big", line: "health { jitter 60% }", err: `4:19: jitter: 60% is out of range (expected 0% to 50%)`},
		{desc: "health timeout over interval", line: "health { interval 1s; timeout 2s }", err: `4:3: health: timeout 2s is longer than interval 1s`},
		{desc: "health zero healthy", line: "health { healthy 0 }", err: `4:20: healthy: must be at least 1, got 0`},
		{desc: "health bad initial", line: "health { initial maybe }", err: `4:20: unknown initial state "maybe" (expected healthy, unhealthy)`},
		{desc: "health unknown", line: "health { port 81 }", err: `4:12: unknown directive "port" in health block`},
		{desc: "outlier defaults", line: "outlier { }", check: func(u Upstream) bool { return *u.Outlier == DefaultOutlier() }},
		{desc: "outlier full", line: "outlier { consecutive_5xx off; consecutive_connect_failures 2; base_ejection 10s; max_ejection 1m; max_ejection_percent 34% }",
			check: func(u Upstream) bool {
				return *u.Outlier == Outlier{Consecutive5xx: 0, ConsecutiveConnectFailures: 2, BaseEjection: 10 * time.Second,
					MaxEjection: time.Minute, MaxEjectionPercent: 34}
			}},
		{desc: "outlier max below base", line: "outlier { base_ejection 1m; max_ejection 30s }", err: `4:3: outlier: max_ejection 30s is shorter than base_ejection 1m0s`},
		{desc: "outlier bad count", line: "outlier { consecutive_5xx 0 }", err: `4:29: consecutive_5xx: 0 is out of range`},
		{desc: "outlier bad percent", line: "outlier { max_ejection_percent 101 }", err: `4:34: max_ejection_percent: 101 is out of range`},
		{desc: "breaker defaults", line: "breaker { }", check: func(u Upstream) bool { return *u.Breaker == DefaultBreaker() }},
		{desc: "breaker full", line: "breaker { error_rate 25%; min_requests 5; window 30s; cool_down 5s; trials 1 }", check: func(u Upstream) bool {
			return *u.Breaker == Breaker{ErrorRate: 25, MinRequests: 5, Window: 30 * time.Second, CoolDown: 5 * time.Second, Trials: 1}
		}},
		{desc: "breaker zero rate", line: "breaker { error_rate 0% }", err: `4:24: error_rate: 0% is out of range (expected 1% to 100%)`},
		{desc: "breaker zero window", line: "breaker { window 0s }", err: `4:20: window: must be more than 0`},
		{desc: "breaker twice", line: "breaker { }\n  breaker { }", err: `5:3: duplicate "breaker" in upstream block`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, strings.Replace(baseUpstream, "%s", tt.line, 1))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("unexpected error:\n%v", err)
				}
				if !tt.check(u(cfg)) {
					t.Errorf("check failed on %q: %+v", tt.line, u(cfg))
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.err)
			}
			got := diagnostics(t, err)
			if !strings.HasPrefix(got[0], "main.conf:"+tt.err) {
				t.Errorf("first error = %q, want prefix %q (all: %q)", got[0], "main.conf:"+tt.err, got)
			}
		})
	}
}

// TestUpstreamBlockVocabulary holds the health, outlier and breaker
// vocabularies and their handler tables to the same names.
func TestUpstreamBlockVocabulary(t *testing.T) {
	t.Parallel()
	tables := map[routes.BlockKind][]string{
		routes.HealthBlock: keys(healthTable), routes.OutlierBlock: keys(outlierTable), routes.BreakerBlock: keys(breakerTable),
	}
	for kind, handlers := range tables {
		var names []string
		for _, s := range routes.Vocabulary(kind) {
			names = append(names, s.Name)
		}
		slices.Sort(names)
		slices.Sort(handlers)
		if !slices.Equal(names, handlers) {
			t.Errorf("%s: vocabulary %v, handlers %v", kind, names, handlers)
		}
	}
}
