package rule

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
)

func mustEntries(t testing.TB, kind Kind, rules ...string) []Entry {
	t.Helper()
	entries := make([]Entry, len(rules))
	for i, s := range rules {
		r, err := Parse(kind, s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		entries[i] = Entry{Rule: r, Priority: r.DefaultPriority()}
	}
	return entries
}

func TestHTTPTablePriority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		rules []string
		prio  map[int]int // explicit priorities by entry index
		req   HTTPRequest
		want  int
	}{
		{
			desc:  "longer regexp beats host",
			rules: []string{"Host(`foobar.traefik.com`)", "HostRegexp(`[a-z]+\\.traefik\\.com`)"},
			req:   HTTPRequest{Host: "foobar.traefik.com"}, want: 1,
		},
		{
			desc:  "explicit priority overrides",
			rules: []string{"Host(`foobar.traefik.com`)", "HostRegexp(`[a-z]+\\.traefik\\.com`)"},
			prio:  map[int]int{0: 100},
			req:   HTTPRequest{Host: "foobar.traefik.com"}, want: 0,
		},
		{
			desc:  "longer prefix wins by length",
			rules: []string{"PathPrefix(`/`)", "PathPrefix(`/api`)", "PathPrefix(`/api/v1`)"},
			req:   HTTPRequest{Path: "/api/v1/x"}, want: 2,
		},
		{
			desc:  "shorter prefix when longer misses",
			rules: []string{"PathPrefix(`/`)", "PathPrefix(`/api`)", "PathPrefix(`/api/v1`)"},
			req:   HTTPRequest{Path: "/api/v2"}, want: 1,
		},
		{
			desc:  "tie goes to first defined",
			rules: []string{"Path(`/b`) || Host(`a`)", "Host(`a`) || Path(`/b`)"},
			req:   HTTPRequest{Host: "a"}, want: 0,
		},
		{
			desc:  "tie with explicit equal priorities",
			rules: []string{"PathPrefix(`/`)", "Host(`a`)", "Host(`a`) && Path(`/`)"},
			prio:  map[int]int{0: 5, 1: 5, 2: 5},
			req:   HTTPRequest{Host: "a", Path: "/"}, want: 0,
		},
		{
			desc:  "negative priority last",
			rules: []string{"Host(`a`)", "PathPrefix(`/`)"},
			prio:  map[int]int{1: -5},
			req:   HTTPRequest{Host: "a", Path: "/"}, want: 0,
		},
		{
			desc:  "no match",
			rules: []string{"Host(`a`)", "Path(`/x`)"},
			req:   HTTPRequest{Host: "b", Path: "/y"}, want: -1,
		},
		{
			desc: "empty table",
			req:  HTTPRequest{Host: "b"}, want: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			entries := mustEntries(t, HTTP, tt.rules...)
			for i, p := range tt.prio {
				entries[i].Priority = p
			}
			tab, err := NewHTTPTable(entries)
			if err != nil {
				t.Fatal(err)
			}
			if got := tab.Match(&tt.req); got != tt.want {
				t.Errorf("Match = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTCPTablePriority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		rules []string
		h     TCPHello
		want  int
	}{
		{desc: "catch-all after shorter rule", rules: []string{"HostSNI(`*`)", "HostSNI(`a`)"}, h: TCPHello{SNI: "a"}, want: 1},
		{desc: "catch-all when nothing else", rules: []string{"HostSNI(`*`)", "HostSNI(`a`)"}, h: TCPHello{SNI: "b"}, want: 0},
		{desc: "catch-all for non-TLS", rules: []string{"HostSNI(`a`)", "HostSNI(`*`)"}, h: TCPHello{}, want: 1},
		{desc: "catch-all after ALPN rule", rules: []string{"HostSNI(`*`)", "ALPN(`h2`)"}, h: TCPHello{ALPN: []string{"h2"}}, want: 1},
		{desc: "double catch-all keeps length", rules: []string{"HostSNI(`*`) || HostSNI(`*`)", "HostSNI(`a`)"}, h: TCPHello{SNI: "a"}, want: 0},
		{desc: "wildcard", rules: []string{"HostSNI(`b.a.com`)", "HostSNI(`*.a.com`)"}, h: TCPHello{SNI: "c.a.com"}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			tab, err := NewTCPTable(mustEntries(t, TCP, tt.rules...))
			if err != nil {
				t.Fatal(err)
			}
			if got := tab.Match(&tt.h); got != tt.want {
				t.Errorf("Match = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTableErrors(t *testing.T) {
	t.Parallel()
	tcp := mustEntries(t, TCP, "HostSNI(`a`)")
	http := mustEntries(t, HTTP, "Host(`a`)")
	if _, err := NewHTTPTable(tcp); err == nil {
		t.Error("NewHTTPTable accepted a TCP rule")
	}
	if _, err := NewTCPTable(http); err == nil {
		t.Error("NewTCPTable accepted an HTTP rule")
	}
	if _, err := NewHTTPTable([]Entry{{}}); err == nil {
		t.Error("NewHTTPTable accepted a nil rule")
	}
}

func TestHTTPTableNoAllocs(t *testing.T) {
	entries := mustEntries(t, HTTP,
		"Host(`a.com`) && PathPrefix(`/api`)",
		"Host(`a.com`)",
		"(Host(`b.com`) || Host(`c.com`)) && Path(`/x`)",
		"Host(`*.d.com`) && PathPrefix(`/`)",
		"Host(`a.com`) && Method(`POST`)",
		"Host(`a.com`) && Header(`X-A`, `1`)",
		"PathPrefix(`/static`)",
		"HostRegexp(`^[a-z]+\\.e\\.com$`)",
		"PathPrefix(`/`)",
	)
	tab, err := NewHTTPTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []HTTPRequest{
		{Method: "GET", Host: "a.com", Path: "/api/v1", Header: hdr{}},
		{Method: "GET", Host: "a.com", Path: "/other", Header: hdr{"X-A": {"1"}}},
		{Method: "GET", Host: "c.com", Path: "/x"},
		{Method: "GET", Host: "q.d.com.", Path: "/y"},
		{Method: "GET", Host: "z.com", Path: "/static/a.css"},
		{Method: "GET", Host: "nope.com", Path: "/"},
		{Method: "GET", Host: "x.e.com", Path: "/"},
	}
	for i := range reqs {
		if n := testing.AllocsPerRun(100, func() { tab.Match(&reqs[i]) }); n != 0 {
			t.Errorf("Match(%+v) allocates %v", reqs[i], n)
		}
	}
}

// linear is the reference: the first of the highest-priority matching
// entries, found by trying them all.
func linear(entries []Entry, match func(*Rule) bool) int {
	best := -1
	for i, e := range entries {
		if match(e.Rule) && (best < 0 || e.Priority > entries[best].Priority) {
			best = i
		}
	}
	return best
}

var (
	genHosts = []string{"a.com", "b.com", "A.com", "x.a.com", "a.com.", "*.a.com", "*.a.com.", "*.com", "*", "*.",
		"*foo.com", "10::10", "a", "*.x.a.com"}
	genPaths   = []string{"/", "/a", "/a/", "/ab", "/a/b", "/b", "/a/b/c", "/a%2Fb"}
	reqHosts   = []string{"", "a.com", "x.a.com", "y.x.a.com", "a.com.", "x.a.com.", "com", "b.com", "10::10", "a", "a.", "x.com"}
	reqPaths   = []string{"", "/", "/a", "/a/", "/ab", "/a/b", "/a/b/c", "/b", "/c", "/a%2Fb"}
	genSNIs    = []string{"a.com", "*.a.com", "A.com", "a.com.", "*", "127.0.0.1", "*.com", "b.a.com"}
	reqSNIs    = []string{"", "a.com", "b.a.com", "c.b.a.com", "127.0.0.1", "com", "x.com"}
	genAtomsFn = map[Kind]func(r *rand.Rand) string{
		HTTP: func(r *rand.Rand) string {
			switch r.IntN(12) {
			case 0, 1, 2:
				return "Host(`" + pick(r, genHosts) + "`)"
			case 3, 4:
				return "PathPrefix(`" + pick(r, genPaths) + "`)"
			case 5:
				return "Path(`" + pick(r, genPaths) + "`)"
			case 6:
				return "Method(`GET`)"
			case 7:
				return "Header(`X-A`, `1`)"
			case 8:
				return "Query(`q`)"
			case 9:
				return "HostRegexp(`^x\\.`)"
			case 10:
				return "PathRegexp(`b$`)"
			}
			return "ClientIP(`10.0.0.0/8`)"
		},
		TCP: func(r *rand.Rand) string {
			switch r.IntN(6) {
			case 0, 1, 2:
				return "HostSNI(`" + pick(r, genSNIs) + "`)"
			case 3:
				return "ALPN(`h2`)"
			case 4:
				return "HostSNIRegexp(`^b`)"
			}
			return "ClientIP(`10.0.0.0/8`)"
		},
	}
)

func pick(r *rand.Rand, s []string) string { return s[r.IntN(len(s))] }

// genRule writes a random rule of kind from a small vocabulary.
func genRule(r *rand.Rand, kind Kind, depth int) string {
	if depth <= 0 {
		return genAtomsFn[kind](r)
	}
	switch r.IntN(5) {
	case 0:
		return "!" + genRule(r, kind, depth-1)
	case 1:
		return "(" + genRule(r, kind, depth-1) + " && " + genRule(r, kind, depth-1) + ")"
	case 2:
		return "(" + genRule(r, kind, depth-1) + " || " + genRule(r, kind, depth-1) + ")"
	case 3:
		return genRule(r, kind, depth-1) + " && " + genRule(r, kind, depth-1)
	}
	return genAtomsFn[kind](r)
}

func genEntries(t testing.TB, r *rand.Rand, kind Kind, n int) []Entry {
	rules := make([]string, n)
	for i := range rules {
		rules[i] = genRule(r, kind, r.IntN(4))
	}
	entries := mustEntries(t, kind, rules...)
	for i := range entries {
		if r.IntN(3) == 0 {
			entries[i].Priority = r.IntN(5) - 1 // many ties
		}
	}
	return entries
}

func genRequest(r *rand.Rand) HTTPRequest {
	req := HTTPRequest{Method: pick(r, []string{"GET", "POST"}), Host: pick(r, reqHosts), Path: pick(r, reqPaths)}
	if r.IntN(2) == 0 {
		req.Header = hdr{"X-A": {"1"}}
	}
	if r.IntN(2) == 0 {
		req.RawQuery = "q"
	}
	req.ClientIP = netip.MustParseAddr(pick(r, []string{"10.1.1.1", "1.1.1.1"}))
	return req
}

func genHello(r *rand.Rand) TCPHello {
	h := TCPHello{SNI: pick(r, reqSNIs), ClientIP: netip.MustParseAddr(pick(r, []string{"10.1.1.1", "1.1.1.1"}))}
	if r.IntN(2) == 0 {
		h.ALPN = []string{"h2"}
	}
	return h
}

// checkIndexed compares the indexed tables with the linear reference on
// random rules and requests drawn from seed.
func checkIndexed(t testing.TB, seed uint64, n int) {
	r := rand.New(rand.NewPCG(seed, seed>>7))
	entries := genEntries(t, r, HTTP, n)
	tab, err := NewHTTPTable(entries)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		req := genRequest(r)
		want := linear(entries, func(rl *Rule) bool { return rl.MatchHTTP(&req) })
		if got := tab.Match(&req); got != want {
			t.Fatalf("seed %d: Match(%+v) = %d, want %d\nrules:\n%s", seed, req, got, want, dump(entries))
		}
	}
	tcpEntries := genEntries(t, r, TCP, n)
	tcpTab, err := NewTCPTable(tcpEntries)
	if err != nil {
		t.Fatal(err)
	}
	for range 30 {
		h := genHello(r)
		want := linear(tcpEntries, func(rl *Rule) bool { return rl.MatchTCP(&h) })
		if got := tcpTab.Match(&h); got != want {
			t.Fatalf("seed %d: Match(%+v) = %d, want %d\nrules:\n%s", seed, h, got, want, dump(tcpEntries))
		}
	}
}

func dump(entries []Entry) string {
	var b strings.Builder
	for i, e := range entries {
		b.WriteString(strings.Repeat(" ", 2) + itoa(i) + " [" + itoa(e.Priority) + "] " + e.Rule.Text() + "\n")
	}
	return b.String()
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestTableMatchesLinear(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		checkIndexed(t, seed, 1+int(seed%40))
	}
}

// TestIndexPrunes checks that a request reaches only the routes of its host
// and path, not the whole table.
func TestIndexPrunes(t *testing.T) {
	t.Parallel()
	tab, err := NewHTTPTable(mustEntries(t, HTTP, benchRules(10000)...))
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range benchRequests(10000)[:64] {
		var buf [maxStackLists][]int32
		n := 0
		for _, l := range tab.t.hosts.collect(req.Host, req.Path, buf[:0]) {
			n += len(l)
		}
		if n > 12 {
			t.Errorf("%s%s reaches %d candidate routes", req.Host, req.Path, n)
		}
	}
}

// TestTableConcurrentMatch runs Match from several goroutines (for -race):
// a table is read-only once built.
func TestTableConcurrentMatch(t *testing.T) {
	t.Parallel()
	tab, err := NewHTTPTable(mustEntries(t, HTTP, benchRules(200)...))
	if err != nil {
		t.Fatal(err)
	}
	reqs := benchRequests(200)
	want := make([]int, len(reqs))
	for i := range reqs {
		want[i] = tab.Match(&reqs[i])
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := g; i < len(reqs); i += 4 {
				ok = ok && tab.Match(&reqs[i]) == want[i]
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("concurrent Match disagrees")
		}
	}
}
