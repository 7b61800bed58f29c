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
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", "edgeway.conf", "main configuration `file`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg, err := conf.Load(*file)
	if err != nil {
		printLoadError(stderr, err)
		return 1
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w.String())
	}
	fmt.Fprintf(stdout, "configuration %s is valid: %d listeners, %d upstreams, %d routes, %d tcp routes\n",
		*file, len(cfg.Listeners), len(cfg.Upstreams), len(cfg.Routes), len(cfg.TCPRoutes))
	return 0
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
