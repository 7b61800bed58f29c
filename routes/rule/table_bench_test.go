package rule

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"
)

var benchResources = []string{"users", "orders", "items", "search", "auth", "billing", "reports"}

// benchRules builds n rules of a realistic mix: mostly Host && PathPrefix,
// some Host only, some Method and Header conjunctions, a few regexps and
// wildcards, and a catch-all PathPrefix(`/`).
func benchRules(n int) []string {
	rules := []string{
		"HostRegexp(`^[a-z0-9-]+\\.preview\\.example\\.com$`)",
		"Host(`static.example.com`) && PathRegexp(`^/assets/.+\\.(css|js)$`)",
		"Host(`*.tenant.example.com`) && PathPrefix(`/`)",
		"PathPrefix(`/`)",
	}
	for i := 0; len(rules) < n; i++ {
		host := fmt.Sprintf("svc%d.example.com", i/5)
		res := benchResources[i%len(benchResources)]
		switch i % 10 {
		case 6:
			rules = append(rules, fmt.Sprintf("Host(`%s`)", host))
		case 7:
			rules = append(rules, fmt.Sprintf("Host(`%s`) && Method(`POST`) && PathPrefix(`/upload`)", host))
		case 8:
			rules = append(rules, fmt.Sprintf("Host(`%s`) && Header(`X-Canary`, `true`)", host))
		case 9:
			rules = append(rules, fmt.Sprintf("(Host(`%s`) || Host(`www.%s`)) && Path(`/health`)", host, host))
		default:
			rules = append(rules, fmt.Sprintf("Host(`%s`) && PathPrefix(`/api/v%d/%s`)", host, i%3, res))
		}
	}
	return rules[:n]
}

// benchRequests spreads requests over matching and non-matching hosts and
// paths of a table of n rules.
func benchRequests(n int) []HTTPRequest {
	hosts := max(1, n/5)
	reqs := make([]HTTPRequest, 0, 1024)
	for i := 0; len(reqs) < cap(reqs); i++ {
		h := fmt.Sprintf("svc%d.example.com", (i*7919)%hosts)
		res := benchResources[i%len(benchResources)]
		r := HTTPRequest{Method: "GET", Header: hdr{}, ClientIP: netip.MustParseAddr("10.0.0.1")}
		switch i % 8 {
		case 0, 1, 2:
			r.Host, r.Path = h, fmt.Sprintf("/api/v%d/%s/%d", i%3, res, i)
		case 3:
			r.Host, r.Path = h, "/health"
		case 4:
			r.Host, r.Path = h, "/no/such/path"
		case 5:
			r.Host, r.Path = fmt.Sprintf("unknown%d.example.org", i), "/api/v1/users"
		case 6:
			r.Host, r.Path = fmt.Sprintf("pr-%d.preview.example.com", i), "/"
		default:
			r.Host, r.Path = fmt.Sprintf("t%d.tenant.example.com", i), "/app"
		}
		reqs = append(reqs, r)
	}
	return reqs
}

func BenchmarkHTTPTableMatch(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			tab, err := NewHTTPTable(mustEntries(b, HTTP, benchRules(n)...))
			if err != nil {
				b.Fatal(err)
			}
			reqs := benchRequests(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				tab.Match(&reqs[i&1023])
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(HTTP, "Host(`svc1.example.com`) && PathPrefix(`/api/v1/users`)"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHTTPTableMatchPercentiles reports the distribution of the cost
// of one match over the request mix: each request is timed over a run of
// back-to-back matches, and p50/p99 are taken over the 1024 requests.
// ns/op is the time of one pass over all of them.
func BenchmarkHTTPTableMatchPercentiles(b *testing.B) {
	const reps = 32
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			tab, err := NewHTTPTable(mustEntries(b, HTTP, benchRules(n)...))
			if err != nil {
				b.Fatal(err)
			}
			reqs := benchRequests(n)
			best := make([]float64, len(reqs))
			for b.Loop() {
				for i := range reqs {
					start := time.Now()
					for range reps {
						tab.Match(&reqs[i])
					}
					ns := float64(time.Since(start).Nanoseconds()) / reps
					if best[i] == 0 || ns < best[i] {
						best[i] = ns
					}
				}
			}
			slices.Sort(best)
			b.ReportMetric(best[len(best)/2], "p50-ns/match")
			b.ReportMetric(best[len(best)*99/100], "p99-ns/match")
		})
	}
}
