package router

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
)

const defaultNotFound = "404 page not found\n"

// Snapshot is one compiled routing table: per listener, the routes that
// serve it and their middlewares. It is immutable once built and safe for
// concurrent use.
type Snapshot struct {
	http map[string]*httpListener
	tcp  map[string]*tcpListener
	// jwts are the named jwt policies (`jwt NAME`), shared by the routes
	// that name them and the JWTClaim matchers; nil: none.
	jwts map[string]*jwtPolicy
}

// httpListener is what a request on one listener needs, computed at load.
type httpListener struct {
	name      string
	normalize bool
	maxBody   int64 // request body limit in bytes; 0: none
	// bodyTimeout bounds a buffered body's silence; 0: none.
	bodyTimeout time.Duration
	// minRate: body_min_rate, for a buffered body (buffering.go).
	minRate conf.MinRate
	trusted []netip.Prefix
	access  *accessList // allow/deny; nil: none
	// errorPages: the listener's error_page lines; nil: none.
	errorPages errorPages
	notFound   []byte
	table      *rule.HTTPTable
	routes     []*route // index = table entry index
	// jwts are the named jwt policies when a rule of the listener's
	// routes calls JWTClaim; nil otherwise, and then no request of the
	// listener has its token looked at before its route is chosen.
	jwts map[string]*jwtPolicy

	// Traffic counters (Options.Metrics): nil when off.
	stats      *listenerStats
	routeStats []*routeStats // index = routes index
	noRoute    *routeStats   // requests no route matched
	servers    map[*upstream.Server]*serverStats
	upstreams  map[string]*upstreamStats
}

type tcpListener struct {
	table  *rule.TCPTable
	routes []*conf.TCPRoute
}

// route is one compiled HTTP route.
type route struct {
	name     string
	upstream string
	pool     *upstream.Pool // nil in a Snapshot from Build
	chain    chain
	access   *accessList // allow/deny; nil: none
	cors     *corsPolicy // nil: none
	// errorPages: the route's error_page lines; nil: none.
	errorPages errorPages
	limits     []*routeLimit // set by Router.Apply; nil: none
	limitNames []string      // the limits the route names, for explain
	auth       *basicAuth    // nil: none
	compress   *compressPolicy
	fwdAuth    *forwardAuth // nil: none
	jwt        *jwtPolicy   // nil: none
	// streamBody: request_buffering off (conf.Route.StreamRequestBody).
	streamBody bool
	// respBuf: response buffering (respbuf.go), resolved at load.
	respBuf respBuffering
	// respTimeout: the route's response_timeout; 0: the pool's.
	respTimeout time.Duration
	// split: the route's traffic split (split.go); nil: none. splitOf:
	// set on a split's variant, the copy of the route for one pool.
	split   *splitter
	splitOf *splitVariant
	// The route's own policy (conf.Route): 0 or nil take the pool's;
	// maxBody 0 takes the listener's, < 0 is no limit.
	connectTimeout, idleTimeout time.Duration
	maxBody                     int64
	retry                       *conf.Retry
	mirrors                     []*mirror // nil: none (mirror.go)
}

// Build compiles cfg into a Snapshot without upstream pools: it can match
// (for `edgeway explain`) but not serve. Errors name the route or listener.
func Build(cfg *conf.Config) (*Snapshot, error) {
	jwts := compileNamedJWTs(cfg.JWTs)
	routes, err := compileRoutes(cfg, jwts)
	if err != nil {
		return nil, err
	}
	s := &Snapshot{http: map[string]*httpListener{}, tcp: map[string]*tcpListener{}, jwts: jwts}
	for _, lc := range cfg.Listeners {
		hl, err := buildHTTPListener(lc, cfg.Routes, routes)
		if err != nil {
			return nil, err
		}
		if usesJWTClaim(lc.Name, cfg.Routes) {
			hl.jwts = jwts
		}
		s.http[lc.Name] = hl
		tl, err := buildTCPListener(lc.Name, cfg.TCPRoutes)
		if err != nil {
			return nil, err
		}
		s.tcp[lc.Name] = tl
	}
	return s, nil
}

func compileRoutes(cfg *conf.Config, jwts map[string]*jwtPolicy) ([]*route, error) {
	known := make(map[string]bool, len(cfg.Upstreams))
	for _, u := range cfg.Upstreams {
		known[u.Name] = true
	}
	routes := make([]*route, len(cfg.Routes))
	for i, rc := range cfg.Routes {
		ch, err := compileChain(rc.Middlewares)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", rc.Name, err)
		}
		switch {
		case rc.Rule == nil:
			return nil, fmt.Errorf("route %s: no rule", rc.Name)
		case ch.answer == nil && rc.Upstream == "":
			return nil, fmt.Errorf("route %s: no upstream and no respond or redirect", rc.Name)
		case ch.answer == nil && !known[rc.Upstream]:
			return nil, fmt.Errorf("route %s: unknown upstream %q", rc.Name, rc.Upstream)
		case rc.JWTPolicy != "" && jwts[rc.JWTPolicy] == nil:
			return nil, fmt.Errorf("route %s: unknown jwt policy %q", rc.Name, rc.JWTPolicy)
		}
		routes[i] = &route{name: rc.Name, upstream: rc.Upstream, chain: ch, access: compileAccess(rc.Access), cors: compileCORS(rc.CORS),
			errorPages: compileErrorPages(rc.ErrorPages), auth: compileBasicAuth(rc.BasicAuth), limitNames: rc.Limits,
			compress: compileCompress(rc.Compress), fwdAuth: compileForwardAuth(rc.ForwardAuth),
			jwt: routeJWT(rc, jwts), streamBody: rc.StreamRequestBody, respTimeout: rc.ResponseTimeout,
			mirrors: compileMirrors(rc.Mirrors), respBuf: compileRespBuffering(rc, cfg.Buffers)}
		routes[i].connectTimeout, routes[i].idleTimeout, routes[i].maxBody, routes[i].retry =
			rc.ConnectTimeout, rc.IdleTimeout, rc.MaxBodyBytes, rc.Retry
		if rc.Split != nil {
			routes[i].split = compileSplit(routes[i], rc.Split)
		}
	}
	return routes, nil
}

func buildHTTPListener(lc conf.Listener, rcs []conf.Route, routes []*route) (*httpListener, error) {
	body := lc.NotFoundBody
	if body == "" {
		body = defaultNotFound
	}
	hl := &httpListener{
		name:        lc.Name,
		normalize:   lc.Normalize,
		maxBody:     bodyLimit(lc),
		bodyTimeout: bodyTimeoutOf(lc),
		minRate:     lc.BodyMinRate.Effective(),
		trusted:     lc.TrustedProxies,
		access:      compileAccess(conf.Access{Allow: lc.Allow, Deny: lc.Deny}),
		errorPages:  compileErrorPages(lc.ErrorPages),
		notFound:    []byte(body),
	}
	var entries []rule.Entry
	for i, rc := range rcs {
		if onListener(rc.Listeners, lc.Name) {
			entries = append(entries, rule.Entry{Rule: rc.Rule, Priority: rc.Priority})
			hl.routes = append(hl.routes, routes[i])
		}
	}
	if len(entries) == 0 {
		return hl, nil
	}
	t, err := rule.NewHTTPTable(entries)
	if err != nil {
		return nil, fmt.Errorf("listener %s: %w", lc.Name, err)
	}
	hl.table = t
	return hl, nil
}

func buildTCPListener(name string, rcs []conf.TCPRoute) (*tcpListener, error) {
	tl := &tcpListener{}
	var entries []rule.Entry
	for i := range rcs {
		if rcs[i].Rule != nil && onListener(rcs[i].Listeners, name) {
			entries = append(entries, rule.Entry{Rule: rcs[i].Rule, Priority: rcs[i].Priority})
			tl.routes = append(tl.routes, &rcs[i])
		}
	}
	if len(entries) == 0 {
		return tl, nil
	}
	t, err := rule.NewTCPTable(entries)
	if err != nil {
		return nil, fmt.Errorf("listener %s: tcp routes: %w", name, err)
	}
	tl.table = t
	return tl, nil
}

// onListener reports whether a route restricted to names serves listener.
func onListener(names []string, listener string) bool {
	return len(names) == 0 || slices.Contains(names, listener)
}

// attach gives every proxying route its pool.
func (s *Snapshot) attach(pools map[string]*upstream.Pool) {
	for _, hl := range s.http {
		for _, rt := range hl.routes {
			rt.pool = pools[rt.upstream]
			for _, m := range rt.mirrors {
				m.pool = pools[m.upstream]
			}
		}
	}
}

// match returns the route serving req, or nil.
func (l *httpListener) match(req *rule.HTTPRequest) *route {
	if l.table == nil {
		return nil
	}
	if i := l.table.Match(req); i >= 0 {
		return l.routes[i]
	}
	return nil
}

// trusts reports whether peer may set forwarding headers.
func (l *httpListener) trusts(peer netip.Addr) bool {
	peer = peer.Unmap()
	for _, p := range l.trusted {
		if p.Contains(peer) {
			return true
		}
	}
	return false
}

// MatchHTTP returns the route (and its upstream, "" for a route that answers
// itself) that serves req on listener. req must hold normalised values, as
// the router builds them (docs/rules.md §3), and the headers as the
// client sent them: as in the router, forwarding headers from a ClientIP
// outside the listener's trusted_proxies do not count, and X-Forwarded-Proto
// (http) and X-Real-Ip (ClientIP) are edgeway's unless a trusted peer sent
// them (§3.1 step 5).
func (s *Snapshot) MatchHTTP(listener string, req *rule.HTTPRequest) (route, upstream string, ok bool) {
	rt := s.matchHTTP(listener, req)
	if rt == nil {
		return "", "", false
	}
	return rt.name, rt.upstream, true
}

// Outcome is what the route that matches a request does with it, as
// `edgeway explain` shows it.
type Outcome struct {
	Route, Upstream string
	// UpstreamPath is the escaped path and query sent upstream, after
	// strip_prefix and add_prefix; "" when the route answers itself.
	UpstreamPath string
	// Status is the answer of a route that answers itself (respond,
	// redirect); 0 otherwise. Location is a redirect's target.
	Status   int
	Location string
	// Policies are the listener's and route's policies the request
	// meets, in the order they apply ("listener allow/deny", "allow/deny",
	// "cors", "error_page").
	Policies []string
	// Denied names the access lists that refuse the request's client
	// ("listener" or "route"; Status is then 403); "" when none do or no
	// client address was given.
	Denied string
}

// Explain matches req on listener like MatchHTTP and says what the route
// does with the request whose escaped path and raw query are given.
func (s *Snapshot) Explain(listener string, req *rule.HTTPRequest, path, query string) (Outcome, bool) {
	rt := s.matchHTTP(listener, req)
	if rt == nil {
		return Outcome{}, false
	}
	o := Outcome{Route: rt.name, Upstream: rt.upstream}
	hl := s.http[listener]
	o.Policies = policies(hl, rt)
	switch ip := req.ClientIP; {
	case !ip.IsValid():
	case hl.access != nil && !hl.access.admits(ip):
		o.Denied, o.Status = "listener", 403
		return o, true
	case rt.access != nil && !rt.access.admits(ip):
		o.Denied, o.Status = "route", 403
		return o, true
	}
	switch a := rt.chain.answer; {
	case a != nil && a.target != nil:
		o.Status, o.Location = a.code, string(a.location(nil, path, query))
	case a != nil:
		o.Status = a.code
	default:
		o.UpstreamPath = rt.chain.rewritePath(path)
		if query != "" {
			o.UpstreamPath += "?" + query
		}
	}
	return o, true
}

// policies lists the policies of hl and rt a request meets, in order.
func policies(hl *httpListener, rt *route) []string {
	var out []string
	if hl.access != nil {
		out = append(out, "listener allow/deny")
	}
	if rt.access != nil {
		out = append(out, "allow/deny")
	}
	if rt.cors != nil {
		out = append(out, "cors")
	}
	for _, n := range rt.limitNames {
		out = append(out, "limit "+n)
	}
	if rt.auth != nil {
		out = append(out, "basic_auth")
	}
	if rt.fwdAuth != nil {
		out = append(out, "forward_auth")
	}
	if rt.jwt != nil && rt.jwt.name != "" {
		out = append(out, "jwt "+rt.jwt.name)
	} else if rt.jwt != nil {
		out = append(out, "jwt")
	}
	if rt.errorPages != nil || hl.errorPages != nil {
		out = append(out, "error_page")
	}
	return out
}

func (s *Snapshot) matchHTTP(listener string, req *rule.HTTPRequest) *route {
	hl := s.http[listener]
	if hl == nil {
		return nil
	}
	var realIP []string
	if req.ClientIP.IsValid() {
		realIP = []string{req.ClientIP.String()}
	}
	trusted := hl.trusts(req.ClientIP)
	mh := newMatchHeader(req.Header, trusted, false, realIP)
	mh.hide = !trusted
	view := *req
	view.Header = &mh
	return hl.match(&view)
}

// MatchTCP returns the TCP route and upstream that serve a connection with
// hello on listener.
func (s *Snapshot) MatchTCP(listener string, h *rule.TCPHello) (route, upstream string, ok bool) {
	rc, ok := s.matchTCP(listener, h)
	return rc.Name, rc.Upstream, ok
}

// matchTCP returns the TCP route that serves a connection with hello on
// listener.
func (s *Snapshot) matchTCP(listener string, h *rule.TCPHello) (conf.TCPRoute, bool) {
	tl := s.tcp[listener]
	if tl == nil || tl.table == nil {
		return conf.TCPRoute{}, false
	}
	i := tl.table.Match(h)
	if i < 0 {
		return conf.TCPRoute{}, false
	}
	return *tl.routes[i], true
}
