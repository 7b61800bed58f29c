package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// readmeAdminSection returns README's "Admin API" section, up to the next
// second-level heading.
func readmeAdminSection(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Admin API\n")
	if !ok {
		t.Fatal(`README has no "## Admin API" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	return sec
}

var shBlockRE = regexp.MustCompile("(?s)```sh\n(.*?)```")

// exampleAdminPorts are the ports examples/edgeway.conf binds, TCP (and
// UDP 8443, HTTP/3): the README's curl lines name them as they are.
var exampleAdminPorts = []int{8080, 8081, 8443, 8444, 9900}

// TestReadmeAdminCurl runs the curl lines of README's Admin API section
// (its ```sh blocks) as written, against the shipped example started as
// `make run` starts it, from a folder where examples/state/admin.token
// is the token the example made: each must exit 0 with a 2xx answer.
// The example binds fixed ports; when one is taken (a `make run` going)
// the test is skipped.
func TestReadmeAdminCurl(t *testing.T) {
	testutil.RequireCurl(t)
	var lines []string
	for _, b := range shBlockRE.FindAllStringSubmatch(readmeAdminSection(t), -1) {
		lines = append(lines, strings.Split(strings.TrimSpace(b[1]), "\n")...)
	}
	if n := countPrefix(lines, "curl "); n < 10 {
		t.Fatalf("found %d curl lines in README's Admin API ```sh blocks, want at least 10", n)
	}
	for _, port := range exampleAdminPorts {
		if !testutil.PortFree(port) {
			t.Skipf("port %d is taken (a `make run` going?): the README's curl lines name the example's fixed ports 8080, 8081, 8443, 8444 and 9900", port)
		}
	}
	root := t.TempDir()
	copyExample(t, filepath.Join(root, "examples"), strings.NewReplacer())
	p := testutil.Start(t, filepath.Join(root, "examples", "edgeway.conf"))
	p.Addrs(t, 4)
	p.WaitLog(t, `msg="admin token created" token_file=`+regexp.QuoteMeta(filepath.Join(root, "examples", "state", "admin.token")))
	p.WaitLog(t, `msg="admin API listening" addr=127.0.0.1:9900`)
	testutil.WaitFor(t, "/readyz 200", func() bool {
		resp, err := http.Get("http://127.0.0.1:9900/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	var prelude []string // the lines before a curl line that are not curl lines (T=...)
	for _, line := range lines {
		if !strings.HasPrefix(line, "curl ") {
			prelude = append(prelude, line)
			continue
		}
		code, body, err := runCurlLine(root, prelude, line)
		if err != nil || code < 200 || code > 299 {
			t.Errorf("README line\n\t%s\nanswered %d (%v): %s", line, code, err, body)
		}
	}
}

// runCurlLine runs line with bash in dir after prelude, with curl told to
// print the status after the body, and returns both.
func runCurlLine(dir string, prelude []string, line string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	script := strings.Join(append(prelude, line+` -sS -w '\n%{http_code}'`), "\n")
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", script)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	body, last, _ := cutLast(strings.TrimRight(out.String(), "\n"), "\n")
	code, _ := strconv.Atoi(last)
	if err != nil {
		return code, body + errb.String(), err
	}
	return code, body, nil
}

// cutLast is strings.Cut at the last sep; all of s is after when s has none.
func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", s, false
	}
	return s[:i], s[i+len(sep):], true
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// handleRE finds the admin endpoints the code registers: ServeMux
// patterns with a method, as Server.Handle and the mux take them.
var handleRE = regexp.MustCompile(`Handle(?:Func)?\("((?:GET|POST|PUT|PATCH|DELETE) /[^"]*)"`)

// TestReadmeAdminShapes holds README's Admin API table to the code and to
// the golden files: every endpoint the code registers has a row, and
// every field name of every golden answer is named in the section.
func TestReadmeAdminShapes(t *testing.T) {
	sec := readmeAdminSection(t)
	root := testutil.ModuleRoot(t)
	var sources []string
	for _, glob := range []string{"admin/*.go", "cmd/edgeway/*.go"} {
		files, _ := filepath.Glob(filepath.Join(root, glob))
		sources = append(sources, files...)
	}
	patterns := 0
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range handleRE.FindAllStringSubmatch(string(b), -1) {
			patterns++
			if !strings.Contains(sec, "| `"+m[1]+"`") && !strings.Contains(sec, "| `"+m[1]+"?") {
				t.Errorf("README's Admin API table has no row for %s (registered in %s)", m[1], filepath.Base(f))
			}
		}
	}
	if patterns < 10 {
		t.Errorf("found %d registered endpoints, want at least 10; is the pattern broken?", patterns)
	}
	golden, err := filepath.Glob(filepath.Join("testdata", "admin", "*.json"))
	if err != nil || len(golden) == 0 {
		t.Fatalf("no golden files in testdata/admin (%v)", err)
	}
	checked := map[string]bool{}
	for _, f := range golden {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, k := range jsonKeys(v) {
			if checked[k] {
				continue
			}
			checked[k] = true
			if !regexp.MustCompile(`[{ ,"]` + regexp.QuoteMeta(k) + `[,}:" ]`).MatchString(sec) {
				t.Errorf("README's Admin API section does not name %q (a field of %s)", k, filepath.Base(f))
			}
		}
	}
}
