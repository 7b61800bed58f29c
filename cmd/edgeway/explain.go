package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
)

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type explainArgs struct {
	file, clientIP, sni, listener string
	headers, alpn                 multiFlag
	positional                    []string
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
	fs.StringVar(&a.sni, "sni", "", "explain a TLS connection with this server `name`")
	fs.Var(&a.alpn, "alpn", "ALPN `protocol` the TLS client offers (repeatable)")
	fs.StringVar(&a.listener, "listener", "", "listener `name` the request arrives on (default: by URL port)")
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
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
	ip, err := parseClientIP(a.clientIP)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway: %v\n", err)
		return 2
	}
	if a.sni != "" {
		return explainTCP(a, cfg, snap, ip, stdout, stderr)
	}
	return explainHTTP(a, cfg, snap, ip, stdout, stderr)
}

func parseClientIP(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("bad --client-ip: %w", err)
	}
	return ip, nil
}

func explainTCP(a *explainArgs, cfg *conf.Config, snap *router.Snapshot, ip netip.Addr, stdout, stderr io.Writer) int {
	if len(a.positional) != 0 {
		fmt.Fprintln(stderr, "edgeway: explain --sni takes no METHOD or URL")
		return 2
	}
	hello := &rule.TCPHello{SNI: strings.ToLower(strings.TrimSpace(a.sni)), ALPN: a.alpn, ClientIP: ip}
	name := a.listener
	if name == "" && len(cfg.Listeners) > 0 {
		name = cfg.Listeners[0].Name
	}
	route, up, ok := snap.MatchTCP(name, hello)
	if !ok {
		fmt.Fprintln(stdout, "no route")
		return 1
	}
	fmt.Fprintf(stdout, "tcp route %s -> upstream %s\n", route, up)
	return 0
}

func explainHTTP(a *explainArgs, cfg *conf.Config, snap *router.Snapshot, ip netip.Addr, stdout, stderr io.Writer) int {
	if len(a.positional) != 2 {
		fmt.Fprintln(stderr, "edgeway: explain needs METHOD and URL (or --sni NAME)")
		return 2
	}
	u, err := url.Parse(a.positional[1])
	if err != nil || u.Host == "" {
		fmt.Fprintf(stderr, "edgeway: bad URL %q: want an absolute URL such as http://example.com/path\n", a.positional[1])
		return 2
	}
	h := http.Header{}
	for _, line := range a.headers {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			fmt.Fprintf(stderr, "edgeway: bad header %q: want 'Name: value'\n", line)
			return 2
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	authority := u.Host
	if hv := h.Get("Host"); hv != "" {
		authority = hv
		h.Del("Host")
	}
	lis := pickListener(cfg, a.listener, u)
	if lis == nil && a.listener != "" {
		fmt.Fprintf(stderr, "edgeway: no listener named %q\n", a.listener)
		return 2
	}
	req := &rule.HTTPRequest{
		Method:   a.positional[0],
		Host:     rule.CanonicalHost(authority),
		RawQuery: rule.NormalizeQuery(u.RawQuery),
		Header:   h,
		ClientIP: ip,
	}
	req.Path = rule.RoutingPath(u.EscapedPath())
	if lis == nil || lis.Normalize {
		_, routing, ok := rule.NormalizePath(u.EscapedPath())
		if !ok {
			fmt.Fprintln(stdout, "bad request: the path would be answered 400")
			return 1
		}
		req.Path = routing
	}
	name := ""
	if lis != nil {
		name = lis.Name
	}
	return printHTTPMatch(snap, name, req, stdout)
}

func printHTTPMatch(snap *router.Snapshot, listener string, req *rule.HTTPRequest, stdout io.Writer) int {
	route, up, ok := snap.MatchHTTP(listener, req)
	if !ok {
		fmt.Fprintln(stdout, "no route")
		return 1
	}
	if up == "" {
		fmt.Fprintf(stdout, "route %s -> answered by the route (respond/redirect)\n", route)
		return 0
	}
	fmt.Fprintf(stdout, "route %s -> upstream %s\n", route, up)
	return 0
}

// pickListener chooses the listener a request would arrive on: the one
// named, else the one whose port is the URL's port, else the first.
func pickListener(cfg *conf.Config, name string, u *url.URL) *conf.Listener {
	if len(cfg.Listeners) == 0 {
		return nil
	}
	if name != "" {
		for i := range cfg.Listeners {
			if cfg.Listeners[i].Name == name {
				return &cfg.Listeners[i]
			}
		}
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for i := range cfg.Listeners {
		if _, p, err := net.SplitHostPort(cfg.Listeners[i].Addr); err == nil && p == port {
			return &cfg.Listeners[i]
		}
	}
	return &cfg.Listeners[0]
}
