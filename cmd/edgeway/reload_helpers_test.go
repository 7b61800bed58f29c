package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// replaceFile writes data to name the way editors and deploy tools do: to
// a temporary file in the same folder, then renamed over name, so that a
// reader (the watcher, a reload) never sees half a file.
func replaceFile(t testing.TB, name string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

// getBody returns the body of a GET of url, or "" on any failure.
func getBody(c *http.Client, url string) string {
	resp, err := c.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return ""
	}
	return string(b)
}

// waitBody polls url until its body is want and returns how long that
// took, or fails the test after timeout. The 2 ms between polls is a
// polling interval, not a wait for an event.
func waitBody(t testing.TB, c *http.Client, url, want string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if getBody(c, url) == want {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s did not answer %q within %v", url, want, timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// rssBytes returns the resident set size of process pid, from
// /proc/PID/statm (its second field, in pages).
func rssBytes(t testing.TB, pid string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// percentiles returns p50, p99 and max of ds.
func percentiles(ds []time.Duration) (p50, p99, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), s[len(s)-1]
}
