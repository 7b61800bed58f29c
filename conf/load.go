package conf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/edgeway/edgeway/routes"
)

// Load reads the main file at path and every route file it includes, and
// returns the validated configuration. On failure the error is an
// *ErrorList holding every problem found, each with file:line:col; a parse
// error in one file does not stop the others from being checked.
func Load(path string) (*Config, error) {
	return load(osFS{}, path)
}

// LoadFS is Load reading from fsys (slash-separated names, as fs.FS wants;
// include patterns must then be relative). Tests and embedded
// configurations use it.
func LoadFS(fsys fs.FS, name string) (*Config, error) {
	return load(ioFS{fsys}, name)
}

// fileSystem is where configuration files come from.
type fileSystem interface {
	ReadFile(name string) ([]byte, error)
	Glob(pattern string) ([]string, error)
	// Resolve turns an include pattern written in file from into a pattern
	// Glob understands.
	Resolve(from, pattern string) (string, error)
	// Abs names a file uniquely (to spot a file included twice).
	Abs(name string) string
}

type osFS struct{}

func (osFS) ReadFile(name string) ([]byte, error)  { return os.ReadFile(name) }
func (osFS) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

func (osFS) Resolve(from, pattern string) (string, error) { return ConfigPath(from, pattern), nil }

func (osFS) Abs(name string) string {
	if abs, err := filepath.Abs(name); err == nil {
		return abs
	}
	return name
}

type ioFS struct{ fsys fs.FS }

func (f ioFS) ReadFile(name string) ([]byte, error)  { return fs.ReadFile(f.fsys, name) }
func (f ioFS) Glob(pattern string) ([]string, error) { return fs.Glob(f.fsys, pattern) }
func (ioFS) Abs(name string) string                  { return path.Clean(name) }

func (ioFS) Resolve(from, pattern string) (string, error) {
	if path.IsAbs(pattern) {
		return "", errors.New("absolute include patterns are not supported here")
	}
	return path.Join(path.Dir(from), pattern), nil
}

func load(fsys fileSystem, name string) (*Config, error) {
	b := newBuilder(fsys)
	b.cfg.MainFile = fsys.Abs(name)
	text, err := fsys.ReadFile(name)
	if err != nil {
		b.errs = append(b.errs, Diagnostic{Pos: Pos{File: name}, Msg: fmt.Sprintf("reading config: %v", err), Err: err})
		return nil, b.errorList()
	}
	b.loadFile(name, text, routes.MainFile)
	rules.Sweep()
	b.validate()
	if len(b.errs) > 0 {
		return nil, b.errorList()
	}
	b.sortDiags(b.cfg.Warnings)
	detach(b.cfg)
	return b.cfg, nil
}

// detach copies the strings that outlive a configuration: the upstream
// pools, and the server state keyed by pool and address, are kept across
// reloads while they are unchanged. Parsed values are slices of their
// file's text, so without the copy a pool made from one file would keep
// that whole file in memory for as long as the pool lives.
func detach(cfg *Config) {
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		u.Name = strings.Clone(u.Name)
		for j := range u.Servers {
			u.Servers[j].Addr = strings.Clone(u.Servers[j].Addr)
		}
	}
}

// loadFile parses one file and applies its directives to the config.
func (b *builder) loadFile(name string, text []byte, kind routes.FileKind) {
	b.cfg.Files = append(b.cfg.Files, b.fs.Abs(name))
	sum := sha256.Sum256(text)
	b.cfg.FileSHA256 = append(b.cfg.FileSHA256, hex.EncodeToString(sum[:]))
	b.seen[b.fs.Abs(name)] = true
	b.order[name] = len(b.order)
	f, errs := routes.Parse(name, text, kind)
	b.sources[name] = routes.NewSource(name, text)
	for _, e := range errs {
		b.errs = append(b.errs, Diagnostic{Pos: Pos{File: e.Pos.File, Line: e.Pos.Line, Col: e.Pos.Col}, Msg: e.Msg, Source: e.Source})
	}
	if f != nil {
		b.reserve(f)
		runTop(b, f)
	}
}

// include expands `include GLOB` in place: the matching files are loaded
// in lexical order, as route files.
func (b *builder) include(f *routes.File, d *routes.Directive) {
	a := d.Args[0]
	pattern, err := b.fs.Resolve(f.Source.Name, a.Value)
	if err != nil {
		b.errorf(a.Pos, "include %q: %v", a.Value, err)
		return
	}
	matches, err := b.fs.Glob(pattern)
	if err != nil {
		b.errorf(a.Pos, "include %q: invalid pattern: %v", a.Value, err)
		return
	}
	if len(matches) == 0 {
		b.errorf(a.Pos, "include %q matched no files", a.Value)
		return
	}
	slices.Sort(matches)
	for _, m := range matches {
		b.includeOne(a, m)
	}
}

func (b *builder) includeOne(a routes.Arg, name string) {
	if b.seen[b.fs.Abs(name)] {
		b.errorf(a.Pos, "include %q: %s is already loaded", a.Value, name)
		return
	}
	text, err := b.fs.ReadFile(name)
	if err != nil {
		b.errs = append(b.errs, b.diag(a.Pos, fmt.Sprintf("include %q: reading %s: %v", a.Value, name, err)))
		b.errs[len(b.errs)-1].Err = err
		return
	}
	b.loadFile(name, text, routes.RouteFile)
}
