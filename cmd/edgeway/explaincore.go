package main

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/edgeway/edgeway/admin"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
)

// errRejectedPath answers an explain question whose path the listener
// would refuse before routing.
var errRejectedPath = &admin.Error{Status: http.StatusUnprocessableEntity, Message: "bad request: the path would be answered 400"}

// errTerminated answers a TLS question no tcp route claims: the listener
// terminates the connection and its HTTP routes serve the requests.
var errTerminated = &admin.Error{Status: http.StatusNotFound, Message: "no route (no tcp route claims the connection: it is terminated here and the HTTP routes serve its requests)", Err: admin.ErrNoRoute}

// explain answers q on snap, a table compiled from cfg: the route that
// would serve the request (or, when q.SNI is set, the TLS connection).
// `edgeway explain` and GET /api/explain both call it. Errors are
// *admin.Error: 400 for a question it cannot read, admin.ErrNoRoute,
// errRejectedPath.
func explain(cfg *conf.Config, snap *router.Snapshot, q admin.ExplainQuery) (admin.Explanation, error) {
	ip, err := parseClientIP(q.ClientIP)
	if err != nil {
		return admin.Explanation{}, err
	}
	if q.TLS || q.SNI != "" {
		return explainTLS(cfg, snap, q, ip)
	}
	return explainRequest(cfg, snap, q, ip)
}

func parseClientIP(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, &admin.Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("client_ip: expected an IP address, got %q", s), Err: err}
	}
	return ip, nil
}

func explainTLS(cfg *conf.Config, snap *router.Snapshot, q admin.ExplainQuery, ip netip.Addr) (admin.Explanation, error) {
	hello := &rule.TCPHello{SNI: strings.TrimSuffix(strings.ToLower(strings.TrimSpace(q.SNI)), "."), ALPN: q.ALPN, ClientIP: ip}
	name := q.Listener
	for _, lc := range cfg.Listeners {
		if name == "" && isTLS(lc) {
			name = lc.Name
		}
	}
	if name == "" && len(cfg.Listeners) > 0 {
		name = cfg.Listeners[0].Name
	}
	route, up, ok := snap.MatchTCP(name, hello)
	if !ok {
		return admin.Explanation{}, errTerminated
	}
	e := admin.Explanation{Kind: "tcp", Listener: name, Route: route, Upstream: up}
	for _, r := range cfg.TCPRoutes {
		if r.Name == route {
			e.Rule, e.Priority, e.Source = r.RuleText, r.Priority, r.Pos.String()
		}
	}
	return e, nil
}

func explainRequest(cfg *conf.Config, snap *router.Snapshot, q admin.ExplainQuery, ip netip.Addr) (admin.Explanation, error) {
	u, err := url.Parse(q.URL)
	if err != nil || u.Host == "" {
		return admin.Explanation{}, admin.Errorf(http.StatusBadRequest, "url: expected an absolute URL such as http://example.com/path, got %q", q.URL)
	}
	h, err := parseHeaders(q.Headers)
	if err != nil {
		return admin.Explanation{}, err
	}
	authority := u.Host
	if hv := h.Get("Host"); hv != "" {
		authority = hv
		h.Del("Host")
	}
	lis, err := pickListener(cfg, q.Listener, u)
	if err != nil {
		return admin.Explanation{}, err
	}
	req := &rule.HTTPRequest{
		Method:   q.Method,
		Host:     rule.CanonicalHost(authority),
		RawQuery: rule.NormalizeQuery(u.RawQuery),
		Header:   h,
		ClientIP: ip,
		Path:     rule.RoutingPath(u.EscapedPath()),
	}
	forward := u.EscapedPath()
	if lis == nil || lis.Normalize {
		fwd, routing, ok := rule.NormalizePath(u.EscapedPath())
		if !ok {
			return admin.Explanation{}, errRejectedPath
		}
		req.Path, forward = routing, fwd
	}
	name := ""
	if lis != nil {
		name = lis.Name
	}
	return matchRequest(cfg, snap, name, req, forward, u.RawQuery)
}

// listenerNames lists the names of cfg's listeners, in file order.
func listenerNames(cfg *conf.Config) []string {
	names := make([]string, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		names[i] = l.Name
	}
	return names
}

func parseHeaders(lines []string) (http.Header, error) {
	h := http.Header{}
	for _, line := range lines {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, admin.Errorf(http.StatusBadRequest, "header: expected \"Name: value\", got %q", line)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h, nil
}

func matchRequest(cfg *conf.Config, snap *router.Snapshot, listener string, req *rule.HTTPRequest, path, query string) (admin.Explanation, error) {
	o, ok := snap.Explain(listener, req, path, query)
	if !ok {
		return admin.Explanation{}, admin.ErrNoRoute
	}
	e := admin.Explanation{Kind: "http", Listener: listener, Route: o.Route, Upstream: o.Upstream,
		UpstreamPath: o.UpstreamPath, Status: o.Status, Location: o.Location, Policies: o.Policies, Denied: o.Denied}
	chosen := -1
	for i, r := range cfg.Routes {
		if r.Name == o.Route {
			e.Rule, e.Priority, e.Source, chosen = r.RuleText, r.Priority, r.Pos.String(), i
			if r.Split != nil {
				for _, p := range r.Split.Pools {
					e.Split = append(e.Split, p.Upstream+" "+conf.ShareText(p.Share))
				}
			}
		}
	}
	e.TriedBefore, e.TriedCount = triedBefore(cfg, listener, chosen)
	for _, u := range cfg.Upstreams {
		if u.Name == o.Upstream && chosen >= 0 {
			e.Settings = effectiveSettings(cfg, listener, &cfg.Routes[chosen], &u)
		}
	}
	return e, nil
}

// effectiveSettings are what route r's requests to pool u meet: the
// route's own policy lines where it has them, else the pool's (or the
// listener's body limit), each with where it comes from.
func effectiveSettings(cfg *conf.Config, listener string, r *conf.Route, u *conf.Upstream) *admin.UpstreamSettings {
	s := &admin.UpstreamSettings{ConnectTimeout: u.ConnectTimeout.Seconds(), ResponseTimeout: u.ResponseTimeout.Seconds(),
		IdleTimeout: u.IdleTimeout.Seconds(), Retries: u.Retry.Attempts, Balance: balanceText(u.Balance), From: map[string]string{}}
	pool := "upstream " + u.Name + " " + u.Pos.String()
	for _, k := range []string{"connect_timeout", "response_timeout", "idle_timeout", "retries"} {
		s.From[k] = pool
	}
	s.MaxBodyBytes, s.From["max_body_bytes"] = conf.DefaultMaxBodyBytes, "default"
	for _, l := range cfg.Listeners {
		if l.Name == listener {
			s.From["max_body_bytes"] = "listener " + l.Name + " " + l.Pos.String()
			if l.MaxBodyBytes != 0 {
				s.MaxBodyBytes = max(0, l.MaxBodyBytes)
			}
		}
	}
	own := func(name string, set bool, apply func()) {
		if p, ok := r.PolicyAt[name]; ok && set {
			apply()
			s.From[name] = "route " + p.String()
		}
	}
	own("connect_timeout", r.ConnectTimeout > 0, func() { s.ConnectTimeout = r.ConnectTimeout.Seconds() })
	own("response_timeout", r.ResponseTimeout > 0, func() { s.ResponseTimeout = r.ResponseTimeout.Seconds() })
	own("idle_timeout", r.IdleTimeout > 0, func() { s.IdleTimeout = r.IdleTimeout.Seconds() })
	own("retries", r.Retry != nil, func() { s.Retries = r.Retry.Attempts })
	own("max_body_bytes", r.MaxBodyBytes != 0, func() { s.MaxBodyBytes = max(0, r.MaxBodyBytes) })
	return s
}

// balanceText writes a balance policy as the configuration does.
func balanceText(b conf.Balance) string {
	s := b.Policy
	if s == "" {
		s = conf.RoundRobin
	}
	if b.HashKey != "" {
		s += " " + b.HashKey
	}
	if b.Name != "" {
		s += " " + b.Name
	}
	return s
}

// maxTried bounds the routes explain lists as tried before the chosen one.
const maxTried = 50

// triedBefore lists the routes of listener that the matcher tries before
// cfg.Routes[chosen] (higher priority first, ties in file order): with
// the chosen one matching, none of them did. At most maxTried names, and
// how many there were.
func triedBefore(cfg *conf.Config, listener string, chosen int) ([]string, int) {
	if chosen < 0 {
		return nil, 0
	}
	c := cfg.Routes[chosen]
	var before []int
	for i, r := range cfg.Routes {
		if i == chosen || !(r.Priority > c.Priority || (r.Priority == c.Priority && i < chosen)) {
			continue
		}
		if len(r.Listeners) == 0 || slices.Contains(r.Listeners, listener) {
			before = append(before, i)
		}
	}
	slices.SortStableFunc(before, func(a, b int) int { return cfg.Routes[b].Priority - cfg.Routes[a].Priority })
	names := make([]string, 0, min(len(before), maxTried))
	for _, i := range before[:min(len(before), maxTried)] {
		names = append(names, cfg.Routes[i].Name)
	}
	return names, len(before)
}
