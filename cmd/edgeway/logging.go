package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/edgeway/edgeway/conf"
)

// loggers holds the error log and the access log (nil when off) built from
// the log block, and the file they write to, if any.
type loggers struct {
	log, access *slog.Logger
	file        *os.File
}

func (l *loggers) close() {
	if l.file != nil {
		l.file.Close()
	}
}

// newLoggers builds both loggers from cfg. Both write to one output.
func newLoggers(cfg conf.Log, stderr io.Writer) (*loggers, error) {
	l := &loggers{}
	var out io.Writer
	switch cfg.Output {
	case "", "stderr":
		out = stderr
	case "stdout":
		out = os.Stdout
	default:
		f, err := os.OpenFile(cfg.Output, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
		if err != nil {
			return nil, fmt.Errorf("opening log output: %w", err)
		}
		l.file, out = f, f
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(orDefault(cfg.Level, "info"))); err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	if cfg.Format == "json" {
		h = slog.NewJSONHandler(out, opts)
	} else {
		h = slog.NewTextHandler(out, opts)
	}
	l.log = slog.New(h)
	if cfg.Access {
		l.access = slog.New(h).With("log", "access")
	}
	return l, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
