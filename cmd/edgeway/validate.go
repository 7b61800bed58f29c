package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/edgeway/edgeway/conf"
)

// cmdValidate loads the configuration, prints every error and warning, and
// exits 0 when the configuration would be accepted, 1 otherwise.
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	file, cfg, code := loadFromFlags("validate", args, stderr)
	if cfg == nil {
		return code
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w.String())
	}
	if diags := preflight(cfg); len(diags) > 0 {
		printLoadError(stderr, (*conf.ErrorList)(&diags))
		return 1
	}
	fmt.Fprintf(stdout, "configuration %s is valid: %s, %s, %s, %s\n", file,
		plural(len(cfg.Listeners), "listener"), plural(len(cfg.Upstreams), "upstream"),
		plural(len(cfg.Routes), "route"), plural(len(cfg.TCPRoutes), "tcp route"))
	return 0
}

// plural writes n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printLoadError prints every diagnostic of a load error, then a count.
func printLoadError(w io.Writer, err error) {
	var list *conf.ErrorList
	if errors.As(err, &list) {
		fmt.Fprintln(w, list.Error())
		if n := len(list.Diagnostics()); n > 0 {
			fmt.Fprintf(w, "%d error(s); configuration refused\n", n)
		}
		return
	}
	fmt.Fprintf(w, "error: %v\n", err)
}

// loadFromFlags parses a command's only flag, -c FILE, and loads FILE. On
// failure it has printed why and cfg is nil; code is the exit code then.
func loadFromFlags(name string, args []string, stderr io.Writer) (file string, cfg *conf.Config, code int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&file, "c", "edgeway.conf", "main configuration `file`")
	if err := fs.Parse(args); err != nil {
		return file, nil, 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "edgeway %s: unexpected argument %q\n", name, fs.Arg(0))
		return file, nil, 2
	}
	cfg, err := conf.Load(file)
	if err != nil {
		printLoadError(stderr, err)
		return file, nil, 1
	}
	return file, cfg, 0
}
