package conf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/routes"
)

// writeBig writes a main file including a generated route file of n routes
// and returns the main file's path.
func writeBig(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	testutil.WriteFiles(tb, dir, map[string]string{
		"edgeway.conf":      "listen web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n",
		"routes/big.routes": testutil.RouteFile(testutil.RouteFileSpec{Routes: n, Pools: 50}),
	})
	return filepath.Join(dir, "edgeway.conf")
}

// BenchmarkLoad10k is the load stage of a reload: reading, parsing, the
// directive handlers and validation. The rules are those of the load
// before, so they come from the rule cache (BenchmarkLoad10kCold parses
// them all).
func BenchmarkLoad10k(b *testing.B) {
	main := writeBig(b, 10000)
	if _, err := Load(main); err != nil { // the load before the reload
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(main); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad10kCold is BenchmarkLoad10k with an empty rule cache, as at
// start-up or when every rule changed: each load parses and compiles
// every rule.
func BenchmarkLoad10kCold(b *testing.B) {
	main := writeBig(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		for range 3 { // two generations unused: the cache is empty
			rules.Sweep()
		}
		if _, err := Load(main); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShadows10k is the shadowed-route check of a load (checkShadows)
// alone, on the 10,000-route file: the routes of the generated file that
// share a regexp-only rule are reported, the rest are compared with the
// few earlier routes the index names.
func BenchmarkShadows10k(b *testing.B) {
	main := writeBig(b, 10000)
	text, err := os.ReadFile(main)
	if err != nil {
		b.Fatal(err)
	}
	bl := newBuilder(osFS{})
	bl.loadFile(main, text, routes.MainFile)
	if len(bl.errs) > 0 {
		b.Fatal(bl.errorList())
	}
	b.ReportAllocs()
	for b.Loop() {
		bl.cfg.Warnings = bl.cfg.Warnings[:0]
		bl.checkShadows()
	}
	b.ReportMetric(float64(len(bl.cfg.Warnings)), "warnings")
}
