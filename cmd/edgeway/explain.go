package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/router"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type explainArgs struct {
	file, clientIP, sni, listener string
	headers, alpn                 multiFlag
	positional                    []string
	tls                           bool // --sni given, even empty
}

// parseExplainArgs accepts flags before, between and after the positional
// METHOD and URL.
func parseExplainArgs(args []string, stderr io.Writer) (*explainArgs, bool) {
	a := &explainArgs{}
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&a.file, "c", "edgeway.conf", "main configuration `file`")
	fs.Var(&a.headers, "H", "request header `Name: value` (repeatable)")
	fs.StringVar(&a.clientIP, "client-ip", "", "client `IP` address the request comes from")
	fs.StringVar(&a.sni, "sni", "", "explain a TLS connection with this server `name` (\"\" for a ClientHello without one)")
	fs.Var(&a.alpn, "alpn", "ALPN `protocol` the TLS client offers (repeatable)")
	fs.StringVar(&a.listener, "listener", "", "listener `name` the request arrives on (default: by URL port)")
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		fs.Visit(func(f *flag.Flag) { a.tls = a.tls || f.Name == "sni" })
		if fs.NArg() == 0 {
			return a, true
		}
		a.positional = append(a.positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// cmdExplain prints the route that would serve a request (or TLS
// connection) and exits 1 when none would.
func cmdExplain(args []string, stdout, stderr io.Writer) int {
	a, ok := parseExplainArgs(args, stderr)
	if !ok {
		return 2
	}
	q, err := a.query()
	if err != nil {
		fmt.Fprintf(stderr, "edgeway: %v\n", err)
		return 2
	}
	cfg, err := conf.Load(a.file)
	if err != nil {
		printLoadError(stderr, err)
		return 2
	}
	snap, err := router.Build(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway: %v\n", err)
		return 2
	}
	e, err := explain(cfg, snap, q)
	return printExplanation(e, err, stdout, stderr)
}

// query turns the command line into the question explain answers.
func (a *explainArgs) query() (admin.ExplainQuery, error) {
	q := admin.ExplainQuery{Headers: a.headers, ClientIP: a.clientIP, Listener: a.listener, TLS: a.tls, SNI: a.sni, ALPN: a.alpn}
	switch {
	case a.tls && len(a.positional) != 0:
		return q, errors.New("explain --sni takes no METHOD or URL")
	case !a.tls && len(a.positional) != 2:
		return q, errors.New("explain needs METHOD and URL (or --sni NAME)")
	case !a.tls:
		q.Method, q.URL = a.positional[0], a.positional[1]
	}
	return q, nil
}

// printExplanation prints explain's answer and returns the exit code: 0
// for a route, 1 for none (or a path refused before routing), 2 for a
// question that cannot be answered.
func printExplanation(e admin.Explanation, err error, stdout, stderr io.Writer) int {
	switch {
	case errors.Is(err, errTerminated):
		fmt.Fprintln(stdout, errTerminated.Message)
		return 1
	case errors.Is(err, admin.ErrNoRoute):
		fmt.Fprintln(stdout, "no route")
		return 1
	case errors.Is(err, errRejectedPath):
		fmt.Fprintln(stdout, errRejectedPath.Message)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "edgeway: %v\n", err)
		return 2
	case e.Kind == "tcp":
		fmt.Fprintf(stdout, "tcp route %s -> upstream %s\n", e.Route, e.Upstream)
	case e.Denied != "":
		fmt.Fprintf(stdout, "route %s -> denied 403 by the %s's access lists\n", e.Route, e.Denied)
	case e.Location != "":
		fmt.Fprintf(stdout, "route %s -> redirect %d %s\n", e.Route, e.Status, e.Location)
	case e.Upstream == "":
		fmt.Fprintf(stdout, "route %s -> respond %d\n", e.Route, e.Status)
	case len(e.Split) > 0:
		fmt.Fprintf(stdout, "route %s -> split %s\n", e.Route, strings.Join(e.Split, ", "))
	default:
		fmt.Fprintf(stdout, "route %s -> upstream %s\n", e.Route, e.Upstream)
	}
	fmt.Fprintf(stdout, "  listener  %s\n  rule      %s (priority %d, %s)\n", e.Listener, e.Rule, e.Priority, e.Source)
	if e.UpstreamPath != "" {
		fmt.Fprintf(stdout, "  sent as   %s\n", e.UpstreamPath)
	}
	if e.TriedCount > 0 {
		more := ""
		if e.TriedCount > len(e.TriedBefore) {
			more = fmt.Sprintf(", and %d more", e.TriedCount-len(e.TriedBefore))
		}
		fmt.Fprintf(stdout, "  tried     %s%s (before it; they did not match)\n", strings.Join(e.TriedBefore, ", "), more)
	}
	if len(e.Policies) > 0 {
		fmt.Fprintf(stdout, "  policies  %s\n", strings.Join(e.Policies, ", "))
	}
	if s := e.Settings; s != nil && e.Denied == "" {
		fmt.Fprintf(stdout, "  upstream  balance %s; connect_timeout %s, response_timeout %s, idle_timeout %s; retries %d\n",
			s.Balance, seconds(s.ConnectTimeout), seconds(s.ResponseTimeout), seconds(s.IdleTimeout), s.Retries)
		body := "unlimited"
		if s.MaxBodyBytes > 0 {
			body = strconv.FormatInt(s.MaxBodyBytes, 10) + " bytes"
		}
		vals := map[string]string{"connect_timeout": seconds(s.ConnectTimeout), "response_timeout": seconds(s.ResponseTimeout),
			"idle_timeout": seconds(s.IdleTimeout), "retries": strconv.Itoa(s.Retries), "max_body_bytes": body}
		for _, k := range []string{"connect_timeout", "response_timeout", "idle_timeout", "retries", "max_body_bytes"} {
			fmt.Fprintf(stdout, "  %-17s %s  (%s)\n", k, vals[k], s.From[k])
		}
	}
	return 0
}

// seconds writes a number of seconds as a duration ("off" for 0).
func seconds(s float64) string {
	if s == 0 {
		return "off"
	}
	return time.Duration(s * float64(time.Second)).String()
}

// pickListener chooses the listener a request would arrive on: the one
// named, else the one whose port is the URL's port; a question no
// listener could receive is refused, naming the listeners.
func pickListener(cfg *conf.Config, name string, u *url.URL) (*conf.Listener, error) {
	if len(cfg.Listeners) == 0 {
		return nil, nil
	}
	var all []string
	for i, l := range cfg.Listeners {
		if name != "" && l.Name == name {
			return &cfg.Listeners[i], nil
		}
		all = append(all, l.Name+" "+l.Addr)
	}
	if name != "" {
		return nil, admin.Errorf(http.StatusBadRequest, "listener: expected one of %s, got %q", strings.Join(listenerNames(cfg), ", "), name)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for i := range cfg.Listeners {
		if _, p, err := net.SplitHostPort(cfg.Listeners[i].Addr); err == nil && p == port {
			return &cfg.Listeners[i], nil
		}
	}
	return nil, admin.Errorf(http.StatusBadRequest, "no listener has port %s (listeners: %s); put a listener's port in the URL or name one with --listener",
		port, strings.Join(all, ", "))
}
