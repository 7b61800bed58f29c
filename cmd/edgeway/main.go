// Command edgeway is the edge reverse proxy: `run` serves a configuration,
// `validate` checks one the way `nginx -t` does, `explain` shows which route
// a request or a TLS connection would take, and `version` prints the build.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage: edgeway <command> [flags]

commands:
  run      -c FILE                 serve the configuration in FILE
  validate -c FILE                 check FILE and every route file it includes
  explain  -c FILE [flags] METHOD URL
  explain  -c FILE --sni NAME [--alpn PROTO]... [--client-ip IP]
                                   print the route a request or TLS connection takes
  check-system [--connections N] [-c FILE]
                                   compare kernel and fd limits with what N connections need
  cluster import -c FILE DIR       copy an ACME storage folder into the cluster's etcd (sealed)
  h3get [-k] [-i] URL              GET URL over HTTP/3 (-k: any certificate; -i: the head too)
  version                          print the version
`

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs one subcommand and returns the process exit code.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "explain":
		return cmdExplain(args[1:], stdout, stderr)
	case "check-system":
		return cmdCheckSystem(args[1:], stdout, stderr)
	case "cluster":
		return cmdCluster(args[1:], stdout, stderr)
	case "h3get":
		return cmdH3Get(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "edgeway %s\n", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "edgeway: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
