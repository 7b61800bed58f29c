package router

import (
	"path/filepath"
	"testing"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

func loadBig(tb testing.TB, n int) *conf.Config {
	tb.Helper()
	dir := tb.TempDir()
	testutil.WriteFiles(tb, dir, map[string]string{
		"edgeway.conf":      "listen web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n",
		"routes/big.routes": testutil.RouteFile(testutil.RouteFileSpec{Routes: n, Pools: 50}),
	})
	cfg, err := conf.Load(filepath.Join(dir, "edgeway.conf"))
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// BenchmarkBuild10k is the compile stage of a reload: middleware chains and
// the rule index of each listener.
func BenchmarkBuild10k(b *testing.B) {
	cfg := loadBig(b, 10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply10k is the swap stage: Build, syncing the pools (unchanged
// here, so kept) and publishing the snapshot.
func BenchmarkApply10k(b *testing.B) {
	cfg := loadBig(b, 10000)
	rt := New(Options{})
	defer rt.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := rt.Apply(cfg); err != nil {
			b.Fatal(err)
		}
	}
}
