package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/router"
)

// memSample is the process's memory after a collection: the live heap
// (runtime.ReadMemStats) and the resident set (/proc/self/statm).
type memSample struct {
	heap, rss int64
}

func sampleMem(t testing.TB) memSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: int64(ms.HeapAlloc), rss: rssBytes(t, "self")}
}

func mib(n int64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB" }

// TestReloadMemory reloads a 10,000-route file 100 times the way the
// daemon does (conf.Load, then Router.Apply) and checks that the live heap
// and the resident set come back to their level after the first reload:
// nothing of an old configuration is kept.
func TestReloadMemory(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reloads a 10,000-route file 100 times; skipped in -short mode and under the race detector")
	}
	dir := t.TempDir()
	gen := func(v int) string {
		return testutil.RouteFile(testutil.RouteFileSpec{Routes: 10000, Pools: 50, Version: v})
	}
	testutil.WriteFiles(t, dir, map[string]string{
		"edgeway.conf":      "listen web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n",
		"routes/big.routes": gen(0),
	})
	mainFile, file := filepath.Join(dir, "edgeway.conf"), filepath.Join(dir, "routes", "big.routes")
	rt := router.New(router.Options{})
	defer rt.Close()
	reload := func() {
		cfg, err := conf.Load(mainFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Apply(cfg); err != nil {
			t.Fatal(err)
		}
	}
	reload()
	before := sampleMem(t)
	var after1 memSample
	for v := 1; v <= 100; v++ {
		if err := os.WriteFile(file, []byte(gen(v)), 0o644); err != nil {
			t.Fatal(err)
		}
		reload()
		if v != 1 && v != 10 && v != 100 {
			continue
		}
		m := sampleMem(t)
		settled, took := settle(t, "self", before.rss+8<<20)
		t.Logf("after %3d reloads: heap %s (before %s); RSS %s at once, %s %v later (before %s)",
			v, mib(m.heap), mib(before.heap), mib(m.rss), mib(settled), took.Round(100*time.Millisecond), mib(before.rss))
		if v == 1 {
			after1 = m
		}
		if v == 100 && m.heap > after1.heap+after1.heap/10 {
			t.Errorf("heap grew from %s after 1 reload to %s after 100", mib(after1.heap), mib(m.heap))
		}
	}
}

// settle waits up to 15 s for the runtime of process pid ("self" for this
// one) to return freed memory to the kernel (its scavenger works in the background, paced to a small share of
// the CPU), until RSS is at most limit; it fails the test when it never
// is, and returns the RSS and the time it took. The 100 ms between
// samples is a polling interval.
func settle(t *testing.T, pid string, limit int64) (int64, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		rss := rssBytes(t, pid)
		if rss <= limit {
			return rss, time.Since(start)
		}
		if time.Since(start) > 15*time.Second {
			t.Errorf("RSS %s did not come back to %s within 15 s", mib(rss), mib(limit))
			return rss, time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
