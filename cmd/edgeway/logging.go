package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/edgeway/edgeway/conf"
)

// loggers holds the error log and the access log (nil when off) built from
// the log block, and the files they write to, which SIGUSR1 reopens.
type loggers struct {
	log, access *slog.Logger
	files       map[string]*reopenFile // by path
}

func (l *loggers) close() {
	for _, f := range l.files {
		f.Close()
	}
}

// reopen reopens every log file at its path, so that logrotate can move
// the old one away (its "create" mode, no copytruncate needed).
func (l *loggers) reopen() error {
	var errs []error
	for _, f := range l.files {
		errs = append(errs, f.Reopen())
	}
	return errors.Join(errs...)
}

// newLoggers builds both loggers from cfg. The access log writes to
// AccessOutput when set, else beside the error log.
func newLoggers(cfg conf.Log, stderr io.Writer) (*loggers, error) {
	l := &loggers{files: map[string]*reopenFile{}}
	var level slog.Level
	if err := level.UnmarshalText([]byte(orDefault(cfg.Level, "info"))); err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	out, err := l.output(cfg.Output, stderr)
	if err != nil {
		l.close()
		return nil, err
	}
	h := newHandler(out, cfg.Format, level)
	l.log = slog.New(h)
	if !cfg.Access {
		return l, nil
	}
	if cfg.AccessOutput != "" && cfg.AccessOutput != cfg.Output {
		aout, err := l.output(cfg.AccessOutput, stderr)
		if err != nil {
			l.close()
			return nil, err
		}
		h = newHandler(aout, cfg.Format, level)
	}
	l.access = slog.New(h).With("log", "access")
	return l, nil
}

// output returns the writer for a log output: stderr, stdout or a file.
func (l *loggers) output(name string, stderr io.Writer) (io.Writer, error) {
	switch name {
	case "", "stderr":
		return stderr, nil
	case "stdout":
		return os.Stdout, nil
	}
	if f := l.files[name]; f != nil {
		return f, nil
	}
	f, err := openReopenable(name)
	if err != nil {
		return nil, err
	}
	l.files[name] = f
	return f, nil
}

func newHandler(out io.Writer, format string, level slog.Level) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.NewJSONHandler(out, opts)
	}
	return slog.NewTextHandler(out, opts)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// reopenFile is a log file that can be reopened at its path while it is
// written to: writes share a read lock (each is one write(2) on an
// O_APPEND file), Reopen swaps the file under the write lock.
type reopenFile struct {
	path string
	mu   sync.RWMutex
	f    *os.File
}

func openReopenable(path string) (*reopenFile, error) {
	f, err := openLog(path)
	if err != nil {
		return nil, err
	}
	return &reopenFile{path: path, f: f}, nil
}

func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening log output: %w", err)
	}
	return f, nil
}

func (r *reopenFile) Write(p []byte) (int, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.f.Write(p)
}

// Reopen opens the path anew and closes the old file; when the open
// fails, logging goes on into the old file.
func (r *reopenFile) Reopen() error {
	f, err := openLog(r.path)
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.f
	r.f = f
	r.mu.Unlock()
	return old.Close()
}

// Close closes the file.
func (r *reopenFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Close()
}
