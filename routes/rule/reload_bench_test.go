package rule

import (
	"regexp"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// bigRules returns the rule texts of the generated 10,000-route file, as
// conf hands them to Parse.
func bigRules(tb testing.TB) []string {
	tb.Helper()
	text := testutil.RouteFile(testutil.RouteFileSpec{Routes: 10000, Pools: 50})
	re := regexp.MustCompile("(?s)match (.*?)\n  [a-z]")
	var rules []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		rules = append(rules, strings.TrimSpace(m[1]))
	}
	if len(rules) < 10000 {
		tb.Fatalf("found %d rules", len(rules))
	}
	return rules
}

// BenchmarkParseRules10k is the rule part of the load stage: parsing and
// compiling every rule of the 10,000-route file.
func BenchmarkParseRules10k(b *testing.B) {
	rules := bigRules(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range rules {
			if _, err := Parse(HTTP, text); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkTable10k is the index part of the compile stage.
func BenchmarkTable10k(b *testing.B) {
	var entries []Entry
	for _, text := range bigRules(b) {
		r, err := Parse(HTTP, text)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, Entry{Rule: r, Priority: r.DefaultPriority()})
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewHTTPTable(entries); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseRules10kCached is BenchmarkParseRules10k through a Cache
// that has seen the rules: what a reload of an unchanged rule costs.
func BenchmarkParseRules10kCached(b *testing.B) {
	rules := bigRules(b)
	var c Cache
	for _, text := range rules {
		c.Parse(HTTP, text)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, text := range rules {
			if _, err := c.Parse(HTTP, text); err != nil {
				b.Fatal(err)
			}
		}
		c.Sweep()
	}
}
