package conf

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/routes"
)

// WatchSet is what a configuration depends on in the file system.
type WatchSet struct {
	// Files are the main file, the route files its includes match now,
	// and the certificate, key and client CA files the tls blocks name,
	// absolute and as written (symlinks not resolved).
	Files []string
	// Globs are the include patterns, absolute, as Load resolves them.
	Globs []string
}

// Watched returns the WatchSet of the configuration whose main file is
// mainFile. It reads and parses the main file only, so it answers for a
// configuration that does not load too: the files to watch are the ones
// whose change could fix it. A main file that cannot be read or parsed
// gives itself alone.
func Watched(mainFile string) WatchSet {
	main := osFS{}.Abs(mainFile)
	ws := WatchSet{Files: []string{main}}
	text, err := os.ReadFile(main)
	if err != nil {
		return ws
	}
	f, _ := routes.Parse(main, text, routes.MainFile)
	if f == nil {
		return ws
	}
	for _, d := range f.Directives {
		ws.Files = append(ws.Files, tlsFiles(main, d)...)
		ws.Files = append(ws.Files, addressFiles(main, d)...)
		ws.Files = append(ws.Files, upstreamTLSFiles(main, d)...)
		if d.Name != "include" || len(d.Args) != 1 {
			continue
		}
		pattern, _ := osFS{}.Resolve(main, d.Args[0].Value)
		ws.Globs = append(ws.Globs, pattern)
		matches, _ := filepath.Glob(pattern)
		slices.Sort(matches)
		ws.Files = append(ws.Files, matches...)
		for _, m := range matches {
			ws.Files = append(ws.Files, routeFileAddressFiles(main, m)...)
		}
	}
	return ws
}

// routeFileAddressFiles lists the files (address lists, error pages) the
// route blocks of route file name read (an unreadable or unparsable file lists none).
func routeFileAddressFiles(main, name string) []string {
	text, err := os.ReadFile(name)
	if err != nil {
		return nil
	}
	f, _ := routes.Parse(name, text, routes.RouteFile)
	if f == nil {
		return nil
	}
	var out []string
	for _, d := range f.Directives {
		out = append(out, addressFiles(main, d)...)
		out = append(out, upstreamTLSFiles(main, d)...)
	}
	return out
}

// addressFiles lists the files the `allow file PATH`, `deny file PATH`
// and `error_page ... file PATH` lines of a listen or route block d
// read, so that an edited list or page reloads like a changed route file.
func addressFiles(main string, d *routes.Directive) []string {
	if d.Name == "jwt" && d.Block != nil { // a named jwt policy
		return jwtFiles(main, d)
	}
	if d.Block == nil || (d.Name != "listen" && d.Name != "route") {
		return nil
	}
	var out []string
	for _, c := range d.Block.Directives {
		if c.Name == "basic_auth" && len(c.Args) > 0 {
			out = append(out, ConfigPath(main, c.Args[0].Value))
			continue
		}
		if c.Name == "jwt" && c.Block != nil {
			out = append(out, jwtFiles(main, c)...)
			continue
		}
		if c.Name != "allow" && c.Name != "deny" && c.Name != "error_page" {
			continue
		}
		for i := 0; i+1 < len(c.Args); i++ {
			if c.Args[i].Value == "file" {
				out = append(out, ConfigPath(main, c.Args[i+1].Value))
				i++
			}
		}
	}
	return out
}

// tlsFiles lists the files a top-level tls block (cert lines) or a
// listen block's tls block (client_ca, cert lines) reads, so that a renewed
// certificate file reloads like a changed route file.
func tlsFiles(main string, d *routes.Directive) []string {
	if d.Block == nil || (d.Name != "tls" && d.Name != "listen") {
		return nil
	}
	var out []string
	add := func(v string) {
		out = append(out, ConfigPath(main, v))
	}
	for _, c := range d.Block.Directives {
		switch {
		case d.Name == "tls" && c.Name == "cert" && len(c.Args) >= 2:
			add(c.Args[0].Value)
			add(c.Args[1].Value)
		case d.Name == "listen" && c.Name == "tls" && c.Block != nil:
			for _, cc := range c.Block.Directives {
				switch {
				case cc.Name == "client_ca" && len(cc.Args) == 1:
					add(cc.Args[0].Value)
				case cc.Name == "cert" && len(cc.Args) >= 2:
					add(cc.Args[0].Value)
					add(cc.Args[1].Value)
				}
			}
		}
	}
	return out
}

// upstreamTLSFiles lists the files an upstream block's tls block reads
// (ca, client_cert), so that a rotated CA or client certificate reloads.
func upstreamTLSFiles(main string, d *routes.Directive) []string {
	if d.Block == nil || d.Name != "upstream" {
		return nil
	}
	var out []string
	for _, c := range d.Block.Directives {
		if c.Name != "tls" || c.Block == nil {
			continue
		}
		for _, cc := range c.Block.Directives {
			switch {
			case cc.Name == "ca" && len(cc.Args) == 1 && cc.Args[0].Value != "system":
				out = append(out, ConfigPath(main, cc.Args[0].Value))
			case cc.Name == "client_cert" && len(cc.Args) == 2:
				out = append(out, ConfigPath(main, cc.Args[0].Value), ConfigPath(main, cc.Args[1].Value))
			}
		}
	}
	return out
}

// WatchOptions tunes a Watcher. The zero value is ready to use.
type WatchOptions struct {
	// Debounce is how long the folders must stay quiet after an event
	// before the files are compared and reload is called; editors and
	// Kubernetes change several files in a burst. Zero means 100ms. A
	// stream of events that never pauses delays a reload by at most
	// 10 × Debounce.
	Debounce time.Duration
	// MaxWriteWait bounds how long a comparison waits for a writer that
	// modified a configuration file to close it (Linux; elsewhere the
	// debounce alone decides). Zero means 10s; after it the file is read
	// as it is, with a warning.
	MaxWriteWait time.Duration
	// Log receives what the watcher cannot act on: a folder it cannot
	// watch, a dropped event queue, a panic in reload. Nil discards it.
	Log *slog.Logger
}

// Watcher calls a function when the configuration's files change: the main
// file, the files its includes match, and the set of files those globs
// match (a file added or removed). It watches folders, not files, so that
// editors that write a temporary file and rename it over the old one, and
// Kubernetes' ConfigMap volumes that swap a ..data symlink, are seen.
//
// Only an event on a path the configuration reaches (a file, a symlink or
// folder on the way to one, a name an include glob matches) schedules a
// comparison; an access log written in the same folder costs nothing. A
// comparison waits while a writer holds a changed file open (Linux), so a
// file truncated and then slowly rewritten is read once, whole. Reload is
// called when the content of a file, read through its symlinks, or the
// list of files differs from the last comparison, so touching a file does
// not reload.
type Watcher struct {
	main     string
	debounce time.Duration
	maxWait  time.Duration
	log      *slog.Logger
	fsw      *fsnotify.Watcher
	writes   *openWrites
	dirs     map[string]bool // folders watched now, resolved
	sums     map[string]string
	reach    reach // the paths whose events schedule a comparison
	ran      atomic.Bool
	close    sync.Once
	closeW   sync.Once
	// checked, when set (by tests), is called after each comparison;
	// scheduled after each event that schedules one.
	checked   func(changed bool)
	scheduled func(name string)
}

// NewWatcher watches the configuration whose main file is mainFile, as it
// is on disk now; Run reports the changes from this point on. It fails when
// a folder holding one of the files cannot be watched (the inotify watch
// limit, for one).
func NewWatcher(mainFile string, opts WatchOptions) (*Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watching configuration: %w", err)
	}
	w := &Watcher{
		main:     osFS{}.Abs(mainFile),
		debounce: opts.Debounce,
		log:      opts.Log,
		maxWait:  opts.MaxWriteWait,
		fsw:      fsw,
		writes:   newOpenWrites(),
		dirs:     map[string]bool{},
	}
	if w.debounce <= 0 {
		w.debounce = 100 * time.Millisecond
	}
	if w.maxWait <= 0 {
		w.maxWait = 10 * time.Second
	}
	if w.log == nil {
		w.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ws := Watched(w.main)
	if err := w.watchDirs(ws); err != nil {
		w.Close()
		return nil, fmt.Errorf("watching configuration: %w", err)
	}
	w.sums = fingerprint(ws)
	w.reach = reachOf(ws)
	return w, nil
}

// Watch watches the configuration whose main file is mainFile and calls
// reload, on its own goroutine, after each change, until ctx is done.
// See Watcher and WatchOptions.Debounce.
func Watch(ctx context.Context, mainFile string, debounce time.Duration, reload func()) error {
	w, err := NewWatcher(mainFile, WatchOptions{Debounce: debounce})
	if err != nil {
		return err
	}
	return w.Run(ctx, reload)
}

// Run calls reload after each change until ctx is done or Close is
// called, then closes the watcher and returns nil. Calls to reload do not overlap; a change made
// while reload runs is seen after it returns. After each reload the
// watcher reads the main file again, so what it watches follows the
// includes. Run may be called once.
func (w *Watcher) Run(ctx context.Context, reload func()) error {
	w.ran.Store(true)
	defer w.closeW.Do(w.writes.close)
	defer w.Close()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var first time.Time   // the first event not yet compared; zero when none
	var waiting time.Time // since when a writer holds a changed file open
	schedule := func() {
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		timer.Reset(max(0, min(w.debounce, first.Add(10*w.debounce).Sub(now))))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil // Close was called
			}
			if ev.Op != fsnotify.Chmod && w.reach.has(ev.Name) {
				if w.scheduled != nil {
					w.scheduled(ev.Name)
				}
				schedule()
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			w.log.Warn("watching configuration", "err", err)
			schedule() // after a dropped event, compare anyway
		case <-timer.C:
			if open := w.writes.writing(w.reach.files); len(open) > 0 {
				if waiting.IsZero() {
					waiting = time.Now()
				}
				if time.Since(waiting) < w.maxWait {
					timer.Reset(w.debounce) // look again once the writer may be done
					continue
				}
				w.log.Warn("configuration file still open for writing; reading it as it is",
					"files", strings.Join(open, " "), "waited", w.maxWait.String())
			}
			first, waiting = time.Time{}, time.Time{}
			w.compare(reload)
		}
	}
}

// Close stops watching; a Run in progress returns. Run calls it when it
// returns, so only a Watcher whose Run is never called needs it.
func (w *Watcher) Close() error {
	var err error
	w.close.Do(func() { err = w.fsw.Close() })
	if !w.ran.Load() {
		w.closeW.Do(w.writes.close) // else Run closes it as it returns
	}
	return err
}

// compare fingerprints the files and calls reload if they changed.
func (w *Watcher) compare(reload func()) {
	ws := Watched(w.main)
	// A folder watched for the first time may have gained files before
	// its watch was added; fingerprint again once the watches settle.
	for range 3 {
		if !w.updateDirs(ws) {
			break
		}
		ws = Watched(w.main)
	}
	sums := fingerprint(ws)
	changed := !maps.Equal(sums, w.sums)
	w.sums = sums
	w.reach = reachOf(ws)
	if changed {
		w.callReload(reload)
	}
	if w.checked != nil {
		w.checked(changed)
	}
}

func (w *Watcher) callReload(reload func()) {
	defer func() {
		if r := recover(); r != nil {
			panics.Report("configuration reload", r)
		}
	}()
	reload()
}

// watchDirs adds a watch on every folder ws needs, failing on the first
// that cannot be watched.
func (w *Watcher) watchDirs(ws WatchSet) error {
	for _, d := range dirsOf(ws) {
		if err := w.fsw.Add(d); err != nil {
			return fmt.Errorf("folder %s: %w", d, err)
		}
		w.writes.add(d)
		w.dirs[d] = true
	}
	return nil
}

// updateDirs makes the watched folders those ws needs and reports whether
// one was added.
func (w *Watcher) updateDirs(ws WatchSet) (added bool) {
	want := dirsOf(ws)
	for d := range w.dirs {
		if !slices.Contains(want, d) {
			w.fsw.Remove(d) // fails for a folder already gone; nothing to do then
			w.writes.remove(d)
			delete(w.dirs, d)
		}
	}
	for _, d := range want {
		if w.dirs[d] {
			continue
		}
		if err := w.fsw.Add(d); err != nil {
			w.log.Warn("watching configuration", "folder", d, "err", err)
			continue
		}
		w.writes.add(d)
		w.dirs[d], added = true, true
	}
	return added
}

// dirsOf returns the folders to watch for ws, resolved and sorted: the
// folder of each file, of each symlink target on the way to its content,
// and the fixed part of each glob. A folder that does not exist yet is
// replaced by its nearest existing parent, so that its creation is seen.
func dirsOf(ws WatchSet) []string {
	set := map[string]bool{}
	for _, f := range ws.Files {
		for _, p := range linkChain(f) {
			set[existingDir(filepath.Dir(p))] = true
		}
	}
	for _, g := range ws.Globs {
		set[existingDir(fixedPrefix(g))] = true
	}
	delete(set, "")
	return slices.Sorted(maps.Keys(set))
}

// linkChain returns name, each path its symlinks lead to in turn, and the
// fully resolved path.
func linkChain(name string) []string {
	chain := []string{name}
	for range 40 { // as many links as Linux follows
		target, err := os.Readlink(name)
		if err != nil {
			break
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(name), target)
		}
		name = target
		chain = append(chain, name)
	}
	if resolved, err := filepath.EvalSymlinks(name); err == nil {
		chain = append(chain, resolved)
	}
	return chain
}

// existingDir returns dir or its nearest existing parent, symlinks
// resolved; "" when none can be found.
func existingDir(dir string) string {
	for {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			if resolved, err := filepath.EvalSymlinks(dir); err == nil {
				return resolved
			}
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// fixedPrefix returns the folder of pattern above its first component
// with a wildcard.
func fixedPrefix(pattern string) string {
	dir := filepath.Dir(pattern)
	for strings.ContainsAny(dir, `*?[\`) {
		dir = filepath.Dir(dir)
	}
	return dir
}

// fingerprint maps each file of ws to a hash of its content, read through
// its symlinks, or to why it cannot be read.
func fingerprint(ws WatchSet) map[string]string {
	sums := make(map[string]string, len(ws.Files))
	for _, f := range ws.Files {
		b, err := os.ReadFile(f)
		if err != nil {
			sums[f] = "error: " + err.Error()
			continue
		}
		sums[f] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return sums
}

// reach is what the configuration reaches in the file system, in the
// form event names take (folders resolved): the paths of its files, of
// every symlink on the way to their content and of the folders above
// them, and its include globs.
type reach struct {
	paths map[string]bool
	files []string   // each file's content, resolved (what a writer writes)
	globs [][]string // each include glob, split into path elements once
}

func reachOf(ws WatchSet) reach {
	r := reach{paths: map[string]bool{}}
	res := resolver{}
	for _, f := range ws.Files {
		for _, p := range linkChain(f) {
			// The folders on the way count too: one swapped (Kubernetes'
			// ..data) or created changes what the file reads.
			for a := p; ; a = filepath.Dir(a) {
				r.paths[res.path(a)] = true
				if filepath.Dir(a) == a {
					break
				}
			}
		}
		if resolved, err := filepath.EvalSymlinks(f); err == nil {
			r.files = append(r.files, resolved)
		}
	}
	for _, g := range ws.Globs {
		r.globs = append(r.globs, strings.Split(res.path(g), string(filepath.Separator)))
	}
	return r
}

// has reports whether an event on name can change the configuration:
// name is one of its paths, or a name an include glob matches or a folder
// on the way to such a name.
func (r reach) has(name string) bool {
	if r.paths[name] {
		return true
	}
	for _, g := range r.globs {
		if globReaches(g, name) {
			return true
		}
	}
	return false
}

// globReaches reports whether name matches the glob whose path elements
// are pe, or matches as many of its leading elements as name has (a
// folder a match could be under). It runs for every event in a watched
// folder (an access log's writes), so it allocates nothing.
func globReaches(pe []string, name string) bool {
	for i, p := range pe {
		elem, rest, more := strings.Cut(name, string(filepath.Separator))
		if ok, err := filepath.Match(p, elem); !ok || err != nil {
			return false
		}
		if !more {
			return true // name ends here: it is a match or a folder on the way to one
		}
		if i == len(pe)-1 {
			return false // name goes deeper than the glob
		}
		name = rest
	}
	return false
}

// resolver resolves folders through their symlinks, once each.
type resolver map[string]string

// path is p with its folder resolved (its longest existing leading part
// through symlinks, the rest as written): the name an event in a watched,
// resolved folder carries.
func (r resolver) path(p string) string {
	return filepath.Join(r.dir(filepath.Dir(p)), filepath.Base(p))
}

func (r resolver) dir(d string) string {
	if v, ok := r[d]; ok {
		return v
	}
	v, err := filepath.EvalSymlinks(d)
	if err != nil {
		if parent := filepath.Dir(d); parent != d {
			v = filepath.Join(r.dir(parent), filepath.Base(d))
		} else {
			v = d
		}
	}
	r[d] = v
	return v
}

// Fingerprint hashes the content of every file the configuration whose
// main file is mainFile reaches (see Watched), so that two reload
// triggers for one change can be told apart from two changes.
func Fingerprint(mainFile string) string {
	sums := fingerprint(Watched(mainFile))
	h := sha256.New()
	for _, f := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(h, "%s\x00%s\x00", f, sums[f])
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
