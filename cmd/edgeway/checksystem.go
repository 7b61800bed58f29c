package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/syscheck"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/listeners/h3"
)

// defaultConnections is what check-system checks for without
// --connections: the number of idle connections `make bench-idle` holds,
// a modest load a stock kernel should take with a few changes.
const defaultConnections = 10000

// cmdCheckSystem prints the kernel and process limits that bound how many
// connections this machine holds, beside what --connections need, and
// exits 1 when one of them is too low.
func cmdCheckSystem(args []string, stdout, stderr io.Writer) int {
	return checkSystem(args, stdout, stderr, syscheck.Local())
}

// checkSystem is cmdCheckSystem reading sys, so tests can hand it a fake
// /proc/sys.
func checkSystem(args []string, stdout, stderr io.Writer, sys syscheck.System) int {
	fs := flag.NewFlagSet("check-system", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("connections", defaultConnections, "concurrent client connections to check for (each with an upstream connection)")
	file := fs.String("c", "", "also check the listeners of configuration `file` (backlog, reuseport)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "edgeway check-system: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *n < 1 {
		fmt.Fprintf(stderr, "edgeway check-system: --connections must be at least 1, got %d\n", *n)
		return 2
	}
	p := syscheck.Params{Connections: *n}
	if *file != "" {
		cfg, err := conf.Load(*file)
		if err != nil {
			printLoadError(stderr, err)
			return 1
		}
		for _, l := range cfg.Listeners {
			sl := syscheck.Listener{Name: l.Name, Backlog: l.Backlog, ReusePort: l.ReusePort}
			if listeners.ServesH3(l) { // the sizes ListenQUIC warns about
				sl.UDPRecvBuffer = cmp.Or(l.QUIC.UDPRecvBuffer, h3.DefaultBufferSize)
				sl.UDPSendBuffer = cmp.Or(l.QUIC.UDPSendBuffer, h3.DefaultBufferSize)
			}
			p.Listeners = append(p.Listeners, sl)
		}
	}
	results := syscheck.Check(sys, p)
	if err := syscheck.Print(stdout, results, p); err != nil {
		fmt.Fprintf(stderr, "edgeway check-system: %v\n", err)
		return 1
	}
	if syscheck.Count(results, syscheck.Low) > 0 {
		return 1
	}
	return 0
}
