package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/testutil"
)

// Prometheus' own checker holds edgeway to what Prometheus expects: a
// scrape with every metric family in it lints clean, and the shipped
// scrape configuration and alert rules load and pass their tests.

const promExamples = "examples/prometheus"

// TestPromtoolCheckMetrics: `promtool check metrics` finds nothing to
// say about a real scrape (names, units, help, counters' _total).
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := testutil.Promtool(t)
	_, body := busyScrape(t)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestPromtoolExamples: the shipped prometheus.yml loads (with its token
// file beside it, as the file's comment says to put it), alerts.yml has
// no lint, and every rule passes its tests in alerts_test.yml.
func TestPromtoolExamples(t *testing.T) {
	promtool := testutil.Promtool(t)
	src := filepath.Join(testutil.ModuleRoot(t), promExamples)
	dir := t.TempDir()
	files := map[string]string{"edgeway-admin.token": e2eToken + "\n"}
	for _, name := range []string{"prometheus.yml", "alerts.yml", "alerts_test.yml"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	testutil.WriteFiles(t, dir, files)
	for _, args := range [][]string{
		{"check", "config", "--lint=all", "--lint-fatal", "prometheus.yml"},
		{"check", "rules", "--lint=all", "--lint-fatal", "alerts.yml"},
		{"test", "rules", "alerts_test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
