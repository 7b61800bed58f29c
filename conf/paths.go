package conf

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/edgeway/edgeway/routes"
)

// One rule for every path a configuration names (include, cert and key,
// client_ca, ca_root, storage, token_file, state_dir, log output and
// access_output): a relative path is taken from the folder of the main
// file, never from the working directory, so that `edgeway run -c
// /etc/edgeway/edgeway.conf` reads the same files from anywhere.
// ConfigPath applies it; Config.Paths lists every path with the directive
// that names it, so that the checks made at start (edgeway's `validate`
// makes the same ones) can point at file:line:col.

// PathUse says what edgeway does with a path at start.
type PathUse uint8

const (
	// ReadFile is read at start and on every reload (cert, key,
	// client_ca, ca_root).
	ReadFile PathUse = iota
	// SecretFile is read at start and must not be readable by group or
	// others (token_file).
	SecretFile
	// WritableDir is written to at run time and created at start when
	// missing (state_dir, acme storage).
	WritableDir
	// AppendFile is opened for appending at start and on SIGUSR1 (log
	// output, access_output).
	AppendFile
)

// PathRef is one path the configuration names.
type PathRef struct {
	Directive string // "cert", "token_file", ...
	Path      string // resolved by ConfigPath
	Use       PathUse
	Pos       Pos
	Source    string // the line at Pos, for the caret display
}

// Errorf is a Diagnostic at the path's directive.
func (p PathRef) Errorf(format string, args ...any) Diagnostic {
	return Diagnostic{Pos: p.Pos, Source: p.Source, Msg: p.Directive + ": " + fmt.Sprintf(format, args...)}
}

// ConfigPath resolves p as written in the configuration whose main file is
// mainFile: an absolute path as it is (cleaned), a relative one from the
// main file's folder.
func ConfigPath(mainFile, p string) string {
	if filepath.IsAbs(p) {
		return strings.Clone(filepath.Clean(p))
	}
	return filepath.Join(filepath.Dir(mainFile), p)
}

// filePath reads argument i of d as a non-empty path, resolves it by
// ConfigPath and records it in Config.Paths; "" after an error.
func (b *builder) filePath(d *routes.Directive, i int, use PathUse) string {
	a := d.Args[i]
	if a.Value == "" {
		b.errorf(a.Pos, "%s: expected a file path, got an empty string", d.Name)
		return ""
	}
	p := ConfigPath(b.cfg.MainFile, a.Value)
	diag := b.diag(a.Pos, "")
	b.cfg.Paths = append(b.cfg.Paths, PathRef{Directive: d.Name, Path: p, Use: use, Pos: diag.Pos, Source: diag.Source})
	return p
}

// logPath reads a log destination: stdout, stderr or a file path.
func (b *builder) logPath(d *routes.Directive) string {
	if v := d.Args[0].Value; v == "stdout" || v == "stderr" {
		return v
	}
	return b.filePath(d, 0, AppendFile)
}

// PathOf returns the PathRef of path as named by directive, and whether
// there is one.
func (c *Config) PathOf(directive, path string) (PathRef, bool) {
	for _, p := range c.Paths {
		if p.Directive == directive && p.Path == path {
			return p, true
		}
	}
	return PathRef{}, false
}
