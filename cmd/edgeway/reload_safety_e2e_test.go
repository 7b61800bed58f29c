package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// prober GETs url in a loop until stopped and counts the answers by
// status.
type prober struct {
	stop  chan struct{}
	done  sync.WaitGroup
	total atomic.Int64
	miss  atomic.Int64 // answers other than 200
}

func probe(url string) *prober {
	p := &prober{stop: make(chan struct{})}
	c := &http.Client{Timeout: 5 * time.Second}
	p.done.Go(func() {
		for {
			select {
			case <-p.stop:
				return
			default:
			}
			resp, err := c.Get(url)
			p.total.Add(1)
			if err != nil || resp.StatusCode != 200 {
				p.miss.Add(1)
			}
			if err == nil {
				resp.Body.Close()
			}
			time.Sleep(5 * time.Millisecond) // pacing, not a wait
		}
	})
	return p
}

func (p *prober) end() (total, miss int64) {
	close(p.stop)
	p.done.Wait()
	return p.total.Load(), p.miss.Load()
}

// count is the number of log lines matching re.
func count(p *testutil.Proc, re string) int {
	return len(regexp.MustCompile(re).FindAllStringIndex(p.Log(), -1))
}

// TestReloadSlowWriterAndEmptiedFile: a route file truncated and rewritten
// 0.4s later by the same writer, as `slow-generator > web.routes` does,
// is applied once whole, with no request answered 404 meanwhile; a route
// file emptied (`: > web.routes`) is refused loudly and the old routes
// stay; POST /api/reload?allow_empty=1 applies it on purpose.
func TestReloadSlowWriterAndEmptiedFile(t *testing.T) {
	a := backend(t, "a")
	routes := func(path string) string {
		return fmt.Sprintf("upstream a { server %s }\nroute r { match PathPrefix(`%s`)\n to a }\n", hostPort(a), path)
	}
	e := startAdmin(t, "", map[string]string{"web.routes": routes("/")})
	file := filepath.Join(e.dir, "routes", "web.routes")

	pr := probe(e.base + "/x")
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // the slow writer's pause is the case under test
	fmt.Fprint(f, routes("/x"))
	f.Close()
	e.p.WaitLog(t, `msg=reloaded routes=1 .*trigger=watch`)
	if total, miss := pr.end(); miss > 0 {
		t.Fatalf("%d of %d requests failed while the route file was rewritten slowly", miss, total)
	}

	pr = probe(e.base + "/x")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.p.WaitLog(t, `reload refused.*listener web would serve no routes \(it serves 1 now\).*allow_empty=1`)
	if total, miss := pr.end(); miss > 0 {
		t.Fatalf("%d of %d requests failed after the route file was emptied", miss, total)
	}
	if code, body := e.do(t, "POST", "/api/reload", true); code != 422 || !strings.Contains(body, "would serve no routes") {
		t.Fatalf("POST /api/reload: %d %s", code, body)
	}
	if code, body := e.do(t, "POST", "/api/reload?allow_empty=1", true); code != 200 {
		t.Fatalf("POST /api/reload?allow_empty=1: %d %s", code, body)
	}
	if out, _ := testutil.Curl(t, "-s", "-o", "/dev/null", "-w", "%{http_code}", e.base+"/x"); out != "404" {
		t.Fatalf("after the emptied file was applied on purpose: %s, want 404", out)
	}
}

// TestReloadSIGHUPAndWatcherOnce: an edit followed by SIGHUP is one
// reload; the second of the watcher and the signal finds the files
// unchanged and says so.
func TestReloadSIGHUPAndWatcherOnce(t *testing.T) {
	a := backend(t, "a")
	p, _, dir := startEdgeway(t, "", map[string]string{"r.routes": fmt.Sprintf(
		"upstream a { server %s }\nroute r { match PathPrefix(`/`)\n to a }\n", hostPort(a))})
	file := filepath.Join(dir, "routes", "r.routes")
	if err := os.WriteFile(file, []byte("route r { match PathPrefix(`/`)\n to missing }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.Cmd.Process.Signal(syscall.SIGHUP)
	p.WaitLog(t, `reload refused.*r\.routes:2:`)
	p.WaitLog(t, `configuration files unchanged since the last reload; nothing to do`)
	if n := count(p, `reload refused`); n != 1 {
		t.Fatalf("one bad edit refused %d times, want once:\n%s", n, p.Log())
	}
}
