package conf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// waitTimeout bounds every wait on the watcher; the waits end as soon as
// their condition holds.
const waitTimeout = 10 * time.Second

const watchMain = "listen web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\n"

// watchProbe runs a Watcher over a folder and counts what it does.
type watchProbe struct {
	reloads  atomic.Int64
	compares atomic.Int64
	mu       sync.Mutex
	seen     []string // the main file's routes/a.routes content at each reload
	events   []string // the events that scheduled a comparison
}

// startWatch writes files under a new folder, watches main in it, and
// stops the watcher when the test ends.
func startWatch(t *testing.T, main string, files map[string]string, debounce time.Duration) (string, *watchProbe) {
	t.Helper()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, files)
	return dir, watchIn(t, filepath.Join(dir, main), debounce)
}

func watchIn(t *testing.T, main string, debounce time.Duration) *watchProbe {
	return watchWith(t, main, WatchOptions{Debounce: debounce})
}

func watchWith(t *testing.T, main string, opts WatchOptions) *watchProbe {
	t.Helper()
	p := &watchProbe{}
	w, err := NewWatcher(main, opts)
	if err != nil {
		t.Fatal(err)
	}
	w.checked = func(bool) { p.compares.Add(1) }
	w.scheduled = func(name string) {
		p.mu.Lock()
		p.events = append(p.events, name)
		p.mu.Unlock()
	}
	probe := filepath.Join(filepath.Dir(main), "routes", "a.routes")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- w.Run(ctx, func() {
			b, _ := os.ReadFile(probe)
			p.mu.Lock()
			p.seen = append(p.seen, string(b))
			p.mu.Unlock()
			p.reloads.Add(1)
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return p
}

func (p *watchProbe) lastSeen() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return ""
	}
	return p.seen[len(p.seen)-1]
}

// waitReloads waits until at least n reloads happened.
func (p *watchProbe) waitReloads(t *testing.T, n int64) {
	t.Helper()
	testutil.Eventually(t, waitTimeout, func() bool { return p.reloads.Load() >= n }, "%d reloads, want %d", p.reloads.Load(), n)
}

// quietDebounce is the debounce of the tests that use quiet. Rewriting a
// file in place is two events (the truncating open, then the write); a
// comparison between them sees the file empty and reloads, so the
// debounce must outlast any pause of the writing goroutine between the
// two system calls, which a loaded CI machine can stretch well past 20ms.
const quietDebounce = 500 * time.Millisecond

// quiet makes a change and checks that the comparison it causes finds
// nothing to reload.
func (p *watchProbe) quiet(t *testing.T, change func()) {
	t.Helper()
	reloads, compares := p.reloads.Load(), p.compares.Load()
	change()
	testutil.Eventually(t, waitTimeout, func() bool { return p.compares.Load() > compares }, "no comparison after the change")
	if got := p.reloads.Load(); got != reloads {
		t.Errorf("%d reloads after an irrelevant change, want %d", got, reloads)
	}
}

func write(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var watchFiles = map[string]string{
	"edgeway.conf":    watchMain,
	"routes/a.routes": "upstream a { server 127.0.0.1:1 }\n",
}

func TestWatchWriteInPlace(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 20*time.Millisecond)
	write(t, filepath.Join(dir, "routes/a.routes"), "upstream a { server 127.0.0.1:2 }\n")
	p.waitReloads(t, 1)
	write(t, filepath.Join(dir, "edgeway.conf"), watchMain+"shutdown_grace 5s\n")
	p.waitReloads(t, 2)
}

func TestWatchSameContentDoesNotReload(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, quietDebounce)
	p.quiet(t, func() { write(t, filepath.Join(dir, "routes/a.routes"), watchFiles["routes/a.routes"]) })
	p.quiet(t, func() {
		now := time.Now()
		must(t, os.Chtimes(filepath.Join(dir, "edgeway.conf"), now, now))
		write(t, filepath.Join(dir, "edgeway.conf"), watchMain) // Chmod alone schedules nothing
	})
}

// TestWatchUnrelatedFiles writes files the configuration does not reach
// beside the ones it does, an access log among them: they schedule no
// comparison (so a busy log cannot hold a reload back), and the rewrite
// of a route file that follows them does.
func TestWatchUnrelatedFiles(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 20*time.Millisecond)
	for i := range 20 {
		write(t, filepath.Join(dir, "access.log"), fmt.Sprintf("request %d\n", i))
	}
	write(t, filepath.Join(dir, "notes.txt"), "hello")
	write(t, filepath.Join(dir, "routes/.a.routes.swp"), "vim")
	write(t, filepath.Join(dir, "routes/README"), "not a route file")
	must(t, os.Mkdir(filepath.Join(dir, "logs"), 0o755))
	write(t, filepath.Join(dir, "routes/a.routes"), watchFiles["routes/a.routes"]) // same content
	testutil.Eventually(t, waitTimeout, func() bool { return p.compares.Load() > 0 }, "no comparison after the route file's rewrite")
	p.mu.Lock()
	events := slices.Clone(p.events)
	p.mu.Unlock()
	for _, e := range events {
		if filepath.Base(e) != "a.routes" {
			t.Errorf("an event on %s scheduled a comparison; only routes/a.routes should (all: %v)", e, events)
		}
	}
	if n := p.reloads.Load(); n != 0 {
		t.Errorf("%d reloads, want 0 (no content changed)", n)
	}
}

// TestWatchSlowWriter truncates a route file and writes its new content
// 0.4s later on the same descriptor, as a shell redirect from a slow
// program does: the reload reads the file once it is closed, never empty.
func TestWatchSlowWriter(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("close-after-write is seen on Linux only")
	}
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 20*time.Millisecond)
	f, err := os.OpenFile(filepath.Join(dir, "routes/a.routes"), os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	time.Sleep(400 * time.Millisecond) // the writer's pause is the case under test, not a wait
	_, err = f.WriteString("# rewritten\n")
	must(t, err)
	must(t, f.Close())
	testutil.Eventually(t, waitTimeout, func() bool { return p.lastSeen() == "# rewritten\n" }, "reload saw %q", p.lastSeen())
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.seen, "") {
		t.Errorf("a reload read the file while it was truncated: %q", p.seen)
	}
}

// TestWatchWriterNeverCloses: a writer that keeps a truncated file open
// past MaxWriteWait does not stop reloads; the file is read as it is.
func TestWatchWriterNeverCloses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, watchFiles)
	p := watchWith(t, filepath.Join(dir, "edgeway.conf"), WatchOptions{Debounce: 20 * time.Millisecond, MaxWriteWait: 200 * time.Millisecond})
	f, err := os.OpenFile(filepath.Join(dir, "routes/a.routes"), os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	defer f.Close()
	p.waitReloads(t, 1)
	if got := p.lastSeen(); got != "" {
		t.Errorf("reload saw %q, want the truncated file", got)
	}
}

// TestWatchWriteTempAndRename saves the way vim (backupcopy=no), VS Code
// and most configuration tools do: a new file renamed over the old one.
func TestWatchWriteTempAndRename(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 20*time.Millisecond)
	for i, name := range []string{"routes/a.routes", "edgeway.conf"} {
		tmp := filepath.Join(dir, filepath.Dir(name), ".tmp-"+filepath.Base(name))
		write(t, tmp, watchFiles[name]+"# edited\n")
		must(t, os.Rename(tmp, filepath.Join(dir, name)))
		p.waitReloads(t, int64(i+1))
	}
	// The renamed-over files are watched as well as the ones they replaced.
	write(t, filepath.Join(dir, "routes/a.routes"), "# third\n")
	p.waitReloads(t, 3)
}

// TestWatchKubernetesSymlinkSwap updates a folder laid out the way the
// kubelet lays out a ConfigMap volume: each file a symlink into ..data, a
// symlink to a timestamped folder that an update replaces in one rename.
func TestWatchKubernetesSymlinkSwap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	version := func(name, routes string) {
		testutil.WriteFiles(t, filepath.Join(dir, name), map[string]string{
			"edgeway.conf": watchMain, "routes/a.routes": routes,
		})
		must(t, os.Symlink(name, filepath.Join(dir, "..data_tmp")))
		must(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	}
	version("..2024_01_01", "# one\n")
	must(t, os.Symlink("..data/edgeway.conf", filepath.Join(dir, "edgeway.conf")))
	must(t, os.Symlink("..data/routes", filepath.Join(dir, "routes")))
	p := watchIn(t, filepath.Join(dir, "edgeway.conf"), 20*time.Millisecond)

	for i, next := range []string{"..2024_01_02", "..2024_01_03"} {
		old, err := os.Readlink(filepath.Join(dir, "..data"))
		must(t, err)
		routes := fmt.Sprintf("# version %d\n", i+2)
		version(next, routes)
		must(t, os.RemoveAll(filepath.Join(dir, old)))
		p.waitReloads(t, int64(i+1))
		testutil.Eventually(t, waitTimeout, func() bool { return p.lastSeen() == routes }, "reload saw %q, want %q", p.lastSeen(), routes)
	}
}

// TestWatchSymlinkElsewhere edits in place a file whose symlink lives in
// the configuration folder and whose content lives in another.
func TestWatchSymlinkElsewhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{"conf/edgeway.conf": watchMain, "real/a.routes": "# one\n"})
	must(t, os.Mkdir(filepath.Join(dir, "conf/routes"), 0o755))
	must(t, os.Symlink("../../real/a.routes", filepath.Join(dir, "conf/routes/a.routes")))
	p := watchIn(t, filepath.Join(dir, "conf/edgeway.conf"), 20*time.Millisecond)
	write(t, filepath.Join(dir, "real/a.routes"), "# two\n")
	p.waitReloads(t, 1)
}

func TestWatchGlobGainsAndLosesFiles(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 20*time.Millisecond)
	write(t, filepath.Join(dir, "routes/b.routes"), "route b { match Path(`/b`); to a }\n")
	p.waitReloads(t, 1)
	must(t, os.Remove(filepath.Join(dir, "routes/b.routes")))
	p.waitReloads(t, 2)
}

// TestWatchFollowsIncludes adds an include of a folder that does not exist
// yet, then creates it: the watch follows the main file's includes.
func TestWatchFollowsIncludes(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 20*time.Millisecond)
	write(t, filepath.Join(dir, "edgeway.conf"), watchMain+"include \"more/deeper/*.routes\"\n")
	p.waitReloads(t, 1)
	testutil.WriteFiles(t, dir, map[string]string{"more/deeper/x.routes": "# x\n"})
	p.waitReloads(t, 2)
	write(t, filepath.Join(dir, "more/deeper/x.routes"), "# changed\n")
	p.waitReloads(t, 3)
}

// TestWatchBurst writes a file 50 times in a row: the writes are debounced
// into one reload, or a few on a slow machine, and the last one sees the
// final content. Each pause of the writing loop longer than the debounce
// can add a reload; 250ms leaves a loaded CI machine a wide margin.
func TestWatchBurst(t *testing.T) {
	t.Parallel()
	dir, p := startWatch(t, "edgeway.conf", watchFiles, 250*time.Millisecond)
	var last string
	for i := range 50 {
		last = fmt.Sprintf("# write %d\n", i)
		write(t, filepath.Join(dir, "routes/a.routes"), last)
	}
	testutil.Eventually(t, waitTimeout, func() bool { return p.lastSeen() == last }, "last reload saw %q, want %q", p.lastSeen(), last)
	if n := p.reloads.Load(); n > 5 {
		t.Errorf("%d reloads for a burst of 50 writes, want at most 5", n)
	}
}

func TestWatchRunStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, watchFiles)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, filepath.Join(dir, "edgeway.conf"), 0, func() {}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Watch did not return after cancel")
	}
	if err := Watch(ctx, filepath.Join(dir, "missing", "edgeway.conf"), 0, func() {}); err != nil {
		t.Errorf("Watch of a missing file = %v, want nil (its nearest folder is watched)", err)
	}
}

func TestWatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"edgeway.conf":    watchMain + "include \"/abs/*.routes\"\nlisten bad {\n",
		"routes/b.routes": "", "routes/a.routes": "", "routes/skip.txt": "",
	})
	ws := Watched(filepath.Join(dir, "edgeway.conf"))
	wantFiles := []string{filepath.Join(dir, "edgeway.conf"), filepath.Join(dir, "routes/a.routes"), filepath.Join(dir, "routes/b.routes")}
	wantGlobs := []string{filepath.Join(dir, "routes/*.routes"), "/abs/*.routes"}
	if !slices.Equal(ws.Files, wantFiles) || !slices.Equal(ws.Globs, wantGlobs) {
		t.Errorf("Watched = %+v, want files %v, globs %v", ws, wantFiles, wantGlobs)
	}
	if ws := Watched(filepath.Join(dir, "nope.conf")); len(ws.Files) != 1 || len(ws.Globs) != 0 {
		t.Errorf("Watched(missing) = %+v, want the file alone", ws)
	}
}

// TestWatchedMatchesLoad checks that Watched finds the files Load reads,
// in the same order, so the watcher follows what a reload would load.
func TestWatchedMatchesLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testutil.WriteFiles(t, dir, map[string]string{
		"edgeway.conf":    "listen web { addr 127.0.0.1:0 }\ninclude \"routes/*.routes\"\ninclude \"extra/z.routes\"\n",
		"routes/b.routes": "upstream u { server 127.0.0.1:1 }\n",
		"routes/a.routes": "route a { match Path(`/a`); to u }\n",
		"extra/z.routes":  "route z { match Path(`/z`); to u }\n",
	})
	cfg, err := Load(filepath.Join(dir, "edgeway.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if ws := Watched(filepath.Join(dir, "edgeway.conf")); !slices.Equal(ws.Files, cfg.Files) {
		t.Errorf("Watched files = %v, Load read %v", ws.Files, cfg.Files)
	}
}

func TestGlobReaches(t *testing.T) {
	pe := strings.Split("/etc/edgeway/conf.d/*/x.routes", "/")
	for name, want := range map[string]bool{
		"/etc/edgeway/conf.d/a/x.routes":        true,  // a match
		"/etc/edgeway/conf.d/a":                 true,  // a folder a match could be under
		"/etc/edgeway":                          true,  // on the way
		"/etc/edgeway/conf.d/a/y.routes":        false, // another name
		"/etc/edgeway/access.log":               false,
		"/etc/edgeway/conf.d/a/x.routes/deeper": false,
	} {
		if got := globReaches(pe, name); got != want {
			t.Errorf("globReaches(%q) = %v, want %v", name, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { globReaches(pe, "/etc/edgeway/access.log") }); n != 0 {
		t.Errorf("%v allocations per event, want 0", n)
	}
}
