package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestReloadScale measures how long a 10,000-route file (50 pools) takes
// from the write to the new answer being served, by SIGHUP and by the file
// watcher, and the daemon's RSS over the reloads.
func TestReloadScale(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("reloads a 10,000-route file; skipped in -short mode and under the race detector")
	}
	const routes, rounds = 10000, 10
	dir := t.TempDir()
	gen := func(v int) []byte {
		return []byte(testutil.RouteFile(testutil.RouteFileSpec{Routes: routes, Pools: 50, Version: v}))
	}
	testutil.WriteFiles(t, dir, map[string]string{
		"edgeway.conf":      "log { access off }\nlisten web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n",
		"routes/big.routes": string(gen(0)),
	})
	p := testutil.Start(t, filepath.Join(dir, "edgeway.conf"))
	url := "http://" + p.Addrs(t, 1)["web"] + "/__version"
	c := &http.Client{Timeout: 5 * time.Second}
	waitBody(t, c, url, "v0", 20*time.Second)
	// A steady keep-alive client on a route of the big file, to see
	// whether a reload stalls the requests served meanwhile.
	ctx, stop := context.WithCancel(context.Background())
	tr := &traffic{}
	defer func() { stop(); tr.wg.Wait() }()
	tr.httpClients(ctx, "http://"+p.Addrs(t, 1)["web"], 1, true, "/__version")
	pid := strconv.Itoa(p.Cmd.Process.Pid)
	file := filepath.Join(dir, "routes", "big.routes")
	rss0 := rssBytes(t, pid)
	var hup, watch []time.Duration
	for v := 1; v <= 2*rounds; v++ {
		data := gen(v) // generated before the clock starts
		start := time.Now()
		replaceFile(t, file, data)
		if v%2 == 1 {
			p.Cmd.Process.Signal(syscall.SIGHUP)
		}
		waitBody(t, c, url, fmt.Sprintf("v%d", v), 10*time.Second)
		d := time.Since(start)
		if v%2 == 1 {
			hup = append(hup, d)
		} else {
			watch = append(watch, d)
		}
		// One reload per write; after a SIGHUP'd write, let the watcher
		// find the files unchanged before the next write, so that each
		// measurement is of one reload.
		testutil.WaitFor(t, "the reload", func() bool { return strings.Count(p.Log(), "msg=reloaded") >= v })
		testutil.WaitFor(t, "the watcher's no-op", func() bool {
			return strings.Count(p.Log(), "unchanged since the last reload") >= (v+1)/2
		})
	}
	stop()
	tr.wg.Wait()
	l50, l99, lmax := percentiles(tr.latencies)
	t.Logf("steady client during the reloads: %d requests, %d failed; latency p50 %v, p99 %v, max %v",
		tr.requests.Load(), tr.failed.Load(), l50, l99, lmax)
	if tr.failed.Load() > 0 {
		t.Errorf("requests failed during the reloads: %s", strings.Join(tr.errors, "\n"))
	}
	h50, h99, hmax := percentiles(hup)
	w50, w99, wmax := percentiles(watch)
	t.Logf("10k routes, write to live: SIGHUP p50 %v p99 %v max %v; watcher p50 %v p99 %v max %v",
		h50, h99, hmax, w50, w99, wmax)
	rss := rssBytes(t, pid)
	settled, took := settle(t, pid, rss0+8<<20)
	t.Logf("daemon RSS: %s before, %s right after %d reloads, %s %v later",
		mib(rss0), mib(rss), 3*rounds, mib(settled), took.Round(100*time.Millisecond))
	if h50 > time.Second || w50 > time.Second {
		t.Errorf("write to live took over 1 s at p50")
	}
}
