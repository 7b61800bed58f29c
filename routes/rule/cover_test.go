package rule

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, kind Kind, text string) *Rule {
	t.Helper()
	r, err := Parse(kind, text)
	if err != nil {
		t.Fatalf("Parse(%q): %v", text, err)
	}
	return r
}

func TestNeverMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		kind Kind
		rule string
		msg  string // substring of the reason; "" for a rule that may match
		off  int
	}{
		{desc: "two hosts", rule: "Host(`a`) && Host(`b`)", msg: "Host(`a`) and Host(`b`) cannot both match one request", off: 18},
		{desc: "two paths", rule: "Path(`/a`) && Path(`/b`)", msg: "Path(`/a`) and Path(`/b`)"},
		{desc: "two methods", rule: "Method(`GET`) && Method(`POST`)", msg: "Method(`GET`) and Method(`POST`)"},
		{desc: "path outside prefix", rule: "PathPrefix(`/api`) && Path(`/ap`)", msg: "cannot both match"},
		{desc: "unrelated prefixes", rule: "PathPrefix(`/a`) && PathPrefix(`/b`)", msg: "cannot both match"},
		{desc: "call and its negation", rule: "Header(`X`, `1`) && !Header(`x`, `1`)", msg: "cannot both match"},
		{desc: "path under a negated prefix", rule: "Path(`/api/x`) && !PathPrefix(`/api`)", msg: "cannot both match"},
		{desc: "disjoint client IPs", rule: "ClientIP(`10.0.0.0/8`) && ClientIP(`192.168.0.1`)", msg: "cannot both match"},
		{desc: "negated catch-all", rule: "!Host(`*`)", msg: "!Host(`*`) matches no request"},
		{desc: "every alternative", rule: "(Path(`/a`) || Path(`/b`)) && Path(`/c`)", msg: "each of its 2 || alternatives is contradictory"},
		{desc: "two SNI names", kind: TCP, rule: "HostSNI(`a.com`) && HostSNI(`b.com`)", msg: "cannot both match"},
		// Not contradictions.
		{desc: "one host", rule: "Host(`a`)"},
		{desc: "host spelt twice", rule: "Host(`a.com`) && Host(`A.COM.`)"},
		{desc: "host and trailing dot", rule: "Host(`x..`) && Host(`x`)"},
		{desc: "wildcard and name", rule: "Host(`*.a.com`) && Host(`b.a.com`)"},
		{desc: "catch-all host", rule: "Host(`*`) && Host(`a`)"},
		{desc: "path in prefix", rule: "PathPrefix(`/api`) && Path(`/apiv2`)"},
		{desc: "nested prefixes", rule: "PathPrefix(`/a`) && PathPrefix(`/a/b`)"},
		{desc: "method case", rule: "Method(`get`) && Method(`GET`)"},
		{desc: "two header values", rule: "Header(`X`, `1`) && Header(`X`, `2`)"},
		{desc: "two query values", rule: "Query(`a`, `1`) && Query(`a`, `2`)"},
		{desc: "one alternative left", rule: "(Path(`/a`) || Path(`/b`)) && Path(`/a`)"},
		{desc: "overlapping client IPs", rule: "ClientIP(`10.0.0.0/8`) && ClientIP(`10.1.2.3`)"},
		{desc: "two ALPN", kind: TCP, rule: "ALPN(`h2`) && ALPN(`http/1.1`)"},
		{desc: "SNI trailing dot", kind: TCP, rule: "HostSNI(`a.com.`) && HostSNI(`a.com`)"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got := mustParse(t, tt.kind, tt.rule).NeverMatches()
			switch {
			case tt.msg == "" && got != nil:
				t.Errorf("NeverMatches(%q) = %q, want nil", tt.rule, got.Msg)
			case tt.msg != "" && got == nil:
				t.Errorf("NeverMatches(%q) = nil, want %q", tt.rule, tt.msg)
			case got != nil && !strings.Contains(got.Msg, tt.msg):
				t.Errorf("NeverMatches(%q) = %q, want it to contain %q", tt.rule, got.Msg, tt.msg)
			case got != nil && tt.off != 0 && got.Offset != tt.off:
				t.Errorf("NeverMatches(%q) at %d, want %d", tt.rule, got.Offset, tt.off)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc           string
		kind           Kind
		earlier, later string
		want           Coverage
	}{
		{desc: "catch-all prefix over a path", earlier: "PathPrefix(`/`)", later: "Path(`/hello`)", want: CoversAll},
		{desc: "catch-all prefix over a host", earlier: "PathPrefix(`/`)", later: "Host(`a.io`)", want: CoversAllButAsterisk},
		{desc: "catch-all host over a host", earlier: "Host(`*`)", later: "Host(`a.io`) && Method(`GET`)", want: CoversAll},
		{desc: "prefix over a longer prefix", earlier: "PathPrefix(`/api`)", later: "PathPrefix(`/api/v1`)", want: CoversAll},
		{desc: "prefix is a string prefix", earlier: "PathPrefix(`/api`)", later: "Path(`/apiv2`)", want: CoversAll},
		{desc: "prefix and host", earlier: "Host(`a.com`) && PathPrefix(`/api`)", later: "PathPrefix(`/api/x`) && Host(`A.com`)", want: CoversAll},
		{desc: "identical rules", earlier: "Header(`X-A`, `1`) && HeaderRegexp(`X-B`, `^b`)", later: "HeaderRegexp(`x-b`, `^b`) && Header(`x-a`, `1`)", want: CoversAll},
		{desc: "identical regexps", earlier: "PathRegexp(`^/a`)", later: "PathRegexp(`^/a`)", want: CoversAll},
		{desc: "earlier has more alternatives", earlier: "Path(`/a`) || Path(`/b`)", later: "Path(`/b`) && Method(`GET`)", want: CoversAll},
		{desc: "every alternative covered", earlier: "PathPrefix(`/a`) || PathPrefix(`/b`)", later: "Path(`/a/1`) || Path(`/b/2`)", want: CoversAll},
		{desc: "negated earlier", earlier: "!Path(`/b`)", later: "Path(`/a`)", want: CoversAll},
		{desc: "narrower client IP", earlier: "ClientIP(`10.0.0.0/8`)", later: "ClientIP(`10.1.0.0/16`)", want: CoversAll},
		{desc: "contradictory alternative ignored", earlier: "Path(`/a`)", later: "Path(`/a`) || (Host(`x`) && Host(`y`))", want: CoversAll},
		{desc: "TCP catch-all", kind: TCP, earlier: "HostSNI(`*`)", later: "HostSNI(`a.com`)", want: CoversAll},
		{desc: "TCP identical", kind: TCP, earlier: "HostSNI(`a.com`) && ALPN(`h2`)", later: "ALPN(`h2`) && HostSNI(`A.com`)", want: CoversAll},
		// Not covered.
		{desc: "prefix vs shorter path", earlier: "PathPrefix(`/api`)", later: "Path(`/ap`)"},
		{desc: "different hosts", earlier: "Host(`a.com`) && PathPrefix(`/`)", later: "Host(`b.com`) && Path(`/x`)"},
		{desc: "host-conditioned earlier", earlier: "Host(`a.com`) && PathPrefix(`/`)", later: "Path(`/x`)"},
		{desc: "header-conditioned earlier", earlier: "PathPrefix(`/`) && Header(`X`, `1`)", later: "Path(`/x`)"},
		{desc: "method-conditioned earlier", earlier: "PathPrefix(`/`) && Method(`GET`)", later: "Path(`/x`)"},
		{desc: "regexp is not everything", earlier: "PathRegexp(`.*`)", later: "Path(`/x`)"},
		{desc: "regexp vs path", earlier: "PathRegexp(`^/a`)", later: "Path(`/a`)"},
		{desc: "one alternative uncovered", earlier: "PathPrefix(`/a`)", later: "Path(`/a/1`) || Path(`/b`)"},
		{desc: "wildcard vs name", earlier: "Host(`*.a.com`)", later: "Host(`x.a.com`)"},
		{desc: "trailing dot host", earlier: "Host(`a.com`)", later: "Host(`a.com.`)"},
		{desc: "wider client IP", earlier: "ClientIP(`10.1.0.0/16`)", later: "ClientIP(`10.0.0.0/8`)"},
		{desc: "later never matches", earlier: "PathPrefix(`/`)", later: "Path(`/a`) && Path(`/b`)"},
		{desc: "earlier never matches", earlier: "Path(`/a`) && Path(`/b`)", later: "Path(`/a`)"},
		{desc: "other kind", earlier: "ClientIP(`10.0.0.1`)", later: "ClientIP(`10.0.0.1`)", kind: -1},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			ek, lk := tt.kind, tt.kind
			if tt.kind < 0 {
				ek, lk = HTTP, TCP
			}
			e, l := mustParse(t, ek, tt.earlier), mustParse(t, lk, tt.later)
			if got := e.Covers(l); got != tt.want {
				t.Errorf("(%s).Covers(%s) = %d, want %d", tt.earlier, tt.later, got, tt.want)
			}
		})
	}
}

func TestCoversSoundOnRequests(t *testing.T) {
	t.Parallel()
	// Whenever Covers answers CoversAll, no request may match the later
	// rule but not the earlier; these requests probe the tricky edges.
	reqs := []HTTPRequest{
		{Method: "GET", Host: "a.com", Path: "/"},
		{Method: "GET", Host: "a.com.", Path: "/api"},
		{Method: "POST", Host: "b.com", Path: "/apiv2"},
		{Method: "OPTIONS", Host: "a.io", Path: ""},
		{Method: "GET", Host: "x.a.com", Path: "/a/1"},
	}
	rules := []string{
		"PathPrefix(`/`)", "Host(`*`)", "Host(`a.com`)", "Host(`a.com.`)", "Path(`/api`)",
		"PathPrefix(`/api`)", "Path(`/apiv2`)", "Method(`GET`)", "!Method(`GET`)", "!Path(`/api`)",
		"Host(`a.io`)", "Host(`*.a.com`)", "PathPrefix(`/a`) || Method(`POST`)",
	}
	for _, et := range rules {
		for _, lt := range rules {
			e, l := mustParse(t, HTTP, et), mustParse(t, HTTP, lt)
			c := e.Covers(l)
			for _, q := range reqs {
				if c == CoversNone || !l.MatchHTTP(&q) || e.MatchHTTP(&q) {
					continue
				}
				if c == CoversAll || q.Path != "" {
					t.Errorf("(%s).Covers(%s) = %d, but %+v matches only the later", et, lt, c, q)
				}
			}
		}
	}
}

func TestCoverIndexCandidates(t *testing.T) {
	t.Parallel()
	filed := []string{
		"Host(`a.com`) && PathPrefix(`/api`)", // 0
		"Host(`a.com`) && Path(`/x`)",         // 1: filed under Path(`/x`), Host has one
		"PathPrefix(`/`)",                     // 2
		"Header(`X`, `1`) || Method(`GET`)",   // 3
		"!Path(`/b`)",                         // 4: broad
		"Path(`/a`) && Path(`/b`)",            // 5: never matches, not filed
	}
	var x CoverIndex
	for i, text := range filed {
		x.Add(i, mustParse(t, HTTP, text))
	}
	tests := []struct {
		desc, rule string
		want       []int
	}{
		{desc: "host and path", rule: "Host(`a.com`) && Path(`/api/v1`)", want: []int{0, 2, 4}},
		{desc: "path only", rule: "Path(`/x`)", want: []int{1, 2, 4}},
		{desc: "method", rule: "Method(`GET`) && Host(`b.com`)", want: []int{2, 3, 4}},
		{desc: "header", rule: "Header(`x`, `1`)", want: []int{2, 3, 4}},
		// PathPrefix(`/`) covers all but "OPTIONS *" of anything.
		{desc: "negated only", rule: "!Host(`c.com`)", want: []int{2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) { // x is not safe for concurrent use
			got := x.Candidates(mustParse(t, HTTP, tt.rule), 100, nil)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Candidates(%s) = %v, want %v", tt.rule, got, tt.want)
			}
		})
	}
}

// TestCoverIndexFindsCovers checks that the index never hides a rule
// Covers would find: for every pair, a covering rule is a candidate.
func TestCoverIndexFindsCovers(t *testing.T) {
	t.Parallel()
	texts := []string{
		"PathPrefix(`/`)", "Host(`*`)", "Host(`a.com`) && PathPrefix(`/api`)", "Path(`/api/x`)",
		"Host(`a.com`) && Path(`/api/x`) && Method(`GET`)", "!Path(`/b`)", "Method(`GET`)",
		"Header(`X`, `1`) || Path(`/h`)", "PathPrefix(`/api`) || Host(`b.com`)", "Path(`/h`) && Header(`x`, `1`)",
		"ClientIP(`10.0.0.0/8`)", "ClientIP(`10.0.0.0/8`) && Path(`/a`)",
	}
	rs := make([]*Rule, len(texts))
	for i, s := range texts {
		rs[i] = mustParse(t, HTTP, s)
	}
	var x CoverIndex
	for i, l := range rs {
		cands := x.Candidates(l, 100, nil)
		for j, e := range rs[:i] {
			if e.Covers(l) != CoversNone && !slices.Contains(cands, j) {
				t.Errorf("%s covers %s but is not among its candidates %v", texts[j], texts[i], cands)
			}
		}
		x.Add(i, l)
	}
}

// FuzzShape checks NeverMatches and Covers against evaluation: on random
// rules and requests, a rule said never to match matches nothing, and a
// covered rule matches nothing its cover does not.
func FuzzShape(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1 << 40, 7777} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		for range 20 {
			checkShape(t, r, HTTP, func(rl *Rule, q *HTTPRequest) bool { return rl.MatchHTTP(q) }, genRequest)
			checkShape(t, r, TCP, func(rl *Rule, h *TCPHello) bool { return rl.MatchTCP(h) }, genHello)
		}
	})
}

func checkShape[R any](t *testing.T, r *rand.Rand, kind Kind, match func(*Rule, *R) bool, gen func(*rand.Rand) R) {
	e := mustParse(t, kind, genRule(r, kind, r.IntN(4)))
	l := mustParse(t, kind, genRule(r, kind, r.IntN(4)))
	c := e.Covers(l)
	for range 100 {
		q := gen(r)
		if l.NeverMatches() != nil && match(l, &q) {
			t.Fatalf("%s never matches (%s), yet matches %+v", l.Text(), l.NeverMatches().Msg, q)
		}
		asterisk := false
		if h, ok := any(&q).(*HTTPRequest); ok {
			asterisk = h.Path == ""
		}
		if (c == CoversAll || c == CoversAllButAsterisk && !asterisk) && match(l, &q) && !match(e, &q) {
			t.Fatalf("(%s).Covers(%s) = %d, yet only the later matches %+v", e.Text(), l.Text(), c, q)
		}
	}
}
