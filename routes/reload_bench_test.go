package routes

import (
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// BenchmarkParse10k is the first stage of a reload of a 10,000-route file:
// scanning, the grammar and the vocabulary check.
func BenchmarkParse10k(b *testing.B) {
	text := []byte(testutil.RouteFile(testutil.RouteFileSpec{Routes: 10000, Pools: 50}))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := Parse("big.routes", text, RouteFile); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
