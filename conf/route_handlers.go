package conf

import (
	"errors"
	"fmt"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/routes"
	"github.com/edgeway/edgeway/routes/rule"
)

// Handlers of the route and tcp route blocks. Both fill a draft, which is
// checked as a whole when the block ends.

type draft struct {
	label       string // "route" or "tcp route", for messages
	kind        rule.Kind
	name        string
	pos         routes.Pos
	rule        *rule.Rule
	text        string
	matched     bool // a match line was seen, even an invalid one
	priority    int
	hasPriority bool
	upstream    string
	toPos       routes.Pos
	listeners   []string
	middlewares []Middleware
	terminal    *routes.Directive // the respond or redirect line
	access      Access
	cors        *CORS
	errorPages  []ErrorPage
	limits      []string
	basicAuth   *BasicAuth
	compress    *Compress
	forwardAuth *ForwardAuth
	jwt         *JWT
	jwtPolicy   string
	streamBody  bool // request_buffering off
	streamResp  bool // response_buffering off
	terminate   bool // tcp route: tls terminate
	respTimeout time.Duration
	// split, sticky and rollback: a split `to` and what goes with it
	// (split.go); the positions are for errors.
	split                  *Split
	sticky                 *SplitSticky
	rollback               *Rollback
	stickyPos, rollbackPos routes.Pos
	// policy: the route's own timeouts, body limit and retries (policy.go).
	policy    routePolicy
	mirrors   []Mirror
	mirrorPos []routes.Pos
}

func routeDirective(b *builder, _ *routes.File, d *routes.Directive) {
	r := b.draft(d, rule.HTTP, routeTable)
	if r.upstream != "" && r.terminal != nil {
		b.errorf(r.terminal.Pos, "route %q has both `to` and `%s`: a route either forwards or answers", r.name, r.terminal.Name)
	}
	switch {
	case r.terminal != nil || hasDirective(d, "to"):
	case hasDirective(d, "redirect_https"):
		b.missingf(d, "route %q redirects only requests without TLS; it needs `to UPSTREAM` or a respond or redirect line for the others", r.name)
	default:
		b.errorf(d.Pos, "route %q has neither `to UPSTREAM` nor a respond or redirect line", r.name)
	}
	b.checkMirrors(r)
	if r.name == "stats" && len(d.Args) > 0 {
		b.warnf(d.Args[0].Pos, "route %q: GET /api/routes/stats answers the routes' statistics, so the admin API shows this route in GET /api/routes only (PATCH /api/routes/stats still sets its split); another name avoids the clash", r.name)
	}
	b.cfg.Routes = append(b.cfg.Routes, Route{
		Name: r.name, Rule: r.rule, RuleText: r.text, Priority: r.priority, Upstream: r.upstream,
		Listeners: r.listeners, Middlewares: r.middlewares, Access: r.access, CORS: r.cors, ErrorPages: r.errorPages, Limits: r.limits, BasicAuth: r.basicAuth, Compress: r.compress, ForwardAuth: r.forwardAuth, JWT: r.jwt, JWTPolicy: r.jwtPolicy, StreamRequestBody: r.streamBody, StreamResponseBody: r.streamResp, ResponseTimeout: r.respTimeout, Pos: b.pos(d.Pos),
		Split: b.finishSplit(r), ConnectTimeout: r.policy.connect, IdleTimeout: r.policy.idle, MaxBodyBytes: r.policy.maxBody,
		Retry: r.policy.retry, PolicyAt: r.policy.at, Mirrors: r.mirrors,
	})
}

func tcpRouteDirective(b *builder, _ *routes.File, d *routes.Directive) {
	r := b.draft(d, rule.TCP, tcpRouteTable)
	if !hasDirective(d, "to") {
		b.missingf(d, "tcp route %q has no `to UPSTREAM` line", r.name)
	} else if r.upstream != "" {
		b.tcpTo = append(b.tcpTo, tcpTo{route: r.name, upstream: r.upstream, pos: r.toPos})
	}
	b.cfg.TCPRoutes = append(b.cfg.TCPRoutes, TCPRoute{
		Name: r.name, Rule: r.rule, RuleText: r.text, Priority: r.priority, Upstream: r.upstream,
		Listeners: r.listeners, Terminate: r.terminate, Pos: b.pos(d.Pos),
	})
}

// draft runs a route block and fills in what both route kinds share.
func (b *builder) draft(d *routes.Directive, kind rule.Kind, tbl table[*draft]) *draft {
	r := &draft{label: d.Name, kind: kind, name: b.name(d, "route"), pos: d.Pos}
	run(b, tbl, r, d.Block.Directives)
	if !r.matched {
		b.missingf(d, "%s %q has no `match` line", r.label, r.name)
	}
	if !r.hasPriority && r.rule != nil {
		r.priority = r.rule.DefaultPriority()
	}
	if r.upstream != "" {
		b.refs = append(b.refs, ref{ns: "upstream", name: r.upstream, pos: r.toPos})
	}
	return r
}

var tcpRouteTable = table[*draft]{
	"match":     match,
	"to":        to,
	"priority":  func(b *builder, r *draft, d *routes.Directive) { r.hasPriority = b.priority(d, &r.priority) },
	"listeners": listeners,
	"tls": func(b *builder, r *draft, d *routes.Directive) {
		if v, ok := b.oneOf(d.Args[0], "tcp route tls mode", []string{"passthrough", "terminate"}); ok {
			r.terminate = v == "terminate"
		}
	},
}

var routeTable = table[*draft]{
	"response_timeout": func(b *builder, r *draft, d *routes.Directive) { b.setDuration(d, &r.respTimeout); r.policy.mark(b, d) },
	"connect_timeout": func(b *builder, r *draft, d *routes.Directive) {
		b.setDuration(d, &r.policy.connect)
		r.policy.mark(b, d)
	},
	"idle_timeout":           func(b *builder, r *draft, d *routes.Directive) { b.setDuration(d, &r.policy.idle); r.policy.mark(b, d) },
	"max_body_bytes":         routeMaxBody,
	"mirror":                 mirror,
	"retries":                routeRetries,
	"sticky":                 sticky,
	"rollback":               rollbackDirective,
	"match":                  match,
	"to":                     splitTo,
	"priority":               func(b *builder, r *draft, d *routes.Directive) { r.hasPriority = b.priority(d, &r.priority) },
	"listeners":              listeners,
	"strip_prefix":           prefix(StripPrefix),
	"add_prefix":             prefix(AddPrefix),
	"set_header":             header(SetRequestHeader),
	"remove_header":          header(RemoveRequestHeader),
	"set_response_header":    header(SetResponseHeader),
	"remove_response_header": header(RemoveResponseHeader),
	"redirect":               redirect,
	"respond":                respond,
	"redirect_https":         redirectHTTPS,
	"acme":                   routeACME,
	"allow":                  func(b *builder, r *draft, d *routes.Directive) { b.addressList(d, &r.access.Allow) },
	"deny":                   func(b *builder, r *draft, d *routes.Directive) { b.addressList(d, &r.access.Deny) },
	"cors":                   corsDirective,
	"error_page":             func(b *builder, r *draft, d *routes.Directive) { b.errorPage(d, &r.errorPages) },
	"basic_auth":             func(b *builder, r *draft, d *routes.Directive) { r.basicAuth = b.basicAuth(d) },
	"compress":               compressDirective,
	"forward_auth":           forwardAuthDirective,
	"jwt":                    jwtDirective,
	"jwt_policy":             jwtPolicyDirective,
	"limit": func(b *builder, r *draft, d *routes.Directive) {
		r.limits = append(r.limits, d.Args[0].Value)
		b.refs = append(b.refs, ref{ns: "limit", name: d.Args[0].Value, pos: d.Args[0].Pos})
	},
	"request_buffering": func(b *builder, r *draft, d *routes.Directive) {
		on := true
		b.setSwitch(d, &on)
		r.streamBody = !on
	},
	"response_buffering": func(b *builder, r *draft, d *routes.Directive) {
		on := true
		b.setSwitch(d, &on)
		r.streamResp = !on
	},
}

// corsDirective reads a route's `cors { ... }` block.
func corsDirective(b *builder, r *draft, d *routes.Directive) {
	c := &CORS{Pos: b.pos(d.Pos)}
	run(b, corsTable, c, d.Block.Directives)
	switch {
	case len(c.Origins) == 0 && !c.AnyOrigin:
		b.missingf(d, "cors block has no origins (expected `origins https://app.example.com ...` or `origins *`)")
	case c.AnyOrigin && c.Credentials:
		b.errorf(d.Pos, "cors: `origins *` cannot go with `credentials on` (browsers refuse it): list the origins")
	}
	if len(c.Methods) == 0 {
		c.Methods = []string{"GET", "HEAD", "POST"}
	}
	r.cors = c
}

var corsTable = table[*CORS]{
	"origins": func(b *builder, c *CORS, d *routes.Directive) {
		for _, a := range d.Args {
			if a.Value == "*" {
				c.AnyOrigin = true
				continue
			}
			o, err := corsOrigin(a.Value)
			if err != nil {
				b.errorf(a.Pos, "origins: %v", err)
				continue
			}
			c.Origins = append(c.Origins, o)
		}
	},
	"methods": func(b *builder, c *CORS, d *routes.Directive) {
		for _, a := range d.Args {
			if !httpsyntax.ValidToken(a.Value) {
				b.errorf(a.Pos, "methods: invalid method %q", a.Value)
				continue
			}
			c.Methods = append(c.Methods, a.Value)
		}
	},
	"headers": func(b *builder, c *CORS, d *routes.Directive) { c.Headers = append(c.Headers, b.headerNames(d)...) },
	"expose_headers": func(b *builder, c *CORS, d *routes.Directive) {
		c.ExposeHeaders = append(c.ExposeHeaders, b.headerNames(d)...)
	},
	"credentials": func(b *builder, c *CORS, d *routes.Directive) { b.setSwitch(d, &c.Credentials) },
	"max_age": func(b *builder, c *CORS, d *routes.Directive) {
		if v, ok := b.duration(d, false); ok {
			c.MaxAge = v
		}
	},
}

// corsOrigin checks an origin as a browser serialises it: an http or
// https scheme, a host, an optional port, nothing else; it returns it in
// lower case.
func corsOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "/") {
		return "", fmt.Errorf("invalid origin %q (expected scheme://host[:port], such as https://app.example.com)", s)
	}
	return strings.ToLower(s), nil
}

// headerNames reads header names, canonical.
func (b *builder) headerNames(d *routes.Directive) []string {
	var out []string
	for _, a := range d.Args {
		if !httpsyntax.ValidToken(a.Value) {
			b.errorf(a.Pos, "%s: invalid header name %q", d.Name, a.Value)
			continue
		}
		out = append(out, textproto.CanonicalMIMEHeaderKey(a.Value))
	}
	return out
}

// match parses the rule; its errors and warnings carry positions inside the
// expression, mapped back to the file.
func match(b *builder, r *draft, d *routes.Directive) {
	r.matched = true
	a := d.Args[0]
	if a.Kind != routes.Expr {
		b.errorf(a.Pos, "match: expected a rule expression such as Host(`example.com`), got %s", a)
		return
	}
	parsed, err := rules.Parse(r.kind, a.Value)
	if err != nil {
		var re *rule.Error
		if errors.As(err, &re) {
			b.errorf(b.at(a, re.Offset), "invalid match rule: %s", re.Msg)
		} else {
			b.errorf(a.Pos, "invalid match rule: %v", err)
		}
		return
	}
	r.rule, r.text = parsed, parsed.Text() // not a.Value: a slice of the whole file
	b.jwtClaimRefs(a, parsed)
	for _, w := range parsed.Warnings() {
		b.warnf(b.at(a, w.Offset), "%s", w.Msg)
	}
	if w := parsed.NeverMatches(); w != nil {
		b.warnf(b.at(a, w.Offset), "%s %q can never match: %s", r.label, r.name, w.Msg)
	}
}

func to(b *builder, r *draft, d *routes.Directive) {
	r.upstream, r.toPos = d.Args[0].Value, d.Args[0].Pos
}

func (b *builder) priority(d *routes.Directive, dst *int) bool {
	a := d.Args[0]
	v, err := routes.ParseInt(a.Value)
	if err != nil {
		b.errorf(a.Pos, "priority: %v", err)
		return false
	}
	*dst = v
	return true
}

func listeners(b *builder, r *draft, d *routes.Directive) {
	for _, a := range d.Args {
		if containsString(r.listeners, a.Value) {
			b.errorf(a.Pos, "listener %q is listed twice", a.Value)
			continue
		}
		r.listeners = append(r.listeners, a.Value)
		b.refs = append(b.refs, ref{ns: "listener", name: a.Value, pos: a.Pos})
	}
}

func prefix(kind MiddlewareKind) handler[*draft] {
	return func(b *builder, r *draft, d *routes.Directive) {
		a := d.Args[0]
		if len(a.Value) == 0 || a.Value[0] != '/' || !httpsyntax.ValidFieldValue(a.Value) {
			b.errorf(a.Pos, "%s: expected a path starting with \"/\", got %s", d.Name, a)
			return
		}
		r.middlewares = append(r.middlewares, Middleware{Kind: kind, Arg: a.Value, Pos: b.pos(d.Pos)})
	}
}

// header handles the four header middlewares: NAME, then VALUE for the set_ ones.
func header(kind MiddlewareKind) handler[*draft] {
	return func(b *builder, r *draft, d *routes.Directive) {
		name := d.Args[0]
		if !httpsyntax.ValidToken(name.Value) {
			b.errorf(name.Pos, "%s: invalid header name %s", d.Name, name)
			return
		}
		m := Middleware{Kind: kind, Name: textproto.CanonicalMIMEHeaderKey(name.Value), Pos: b.pos(d.Pos)}
		if len(d.Args) > 1 {
			v := d.Args[1]
			if !httpsyntax.ValidFieldValue(v.Value) {
				b.errorf(v.Pos, "%s: invalid header value %s (control characters are not allowed)", d.Name, v)
				return
			}
			m.Arg = v.Value
		}
		r.middlewares = append(r.middlewares, m)
	}
}

func redirect(b *builder, r *draft, d *routes.Directive) {
	code, ok := b.code(d, isRedirectCode, redirectCodes)
	target := d.Args[1]
	if target.Value == "" || !httpsyntax.ValidFieldValue(target.Value) {
		b.errorf(target.Pos, "redirect: invalid target %s (expected a URL or path)", target)
		ok = false
	}
	b.terminal(r, d, Middleware{Kind: Redirect, Code: code, Arg: target.Value, Pos: b.pos(d.Pos)}, ok)
}

// respond takes a final status (200-599): a 1xx would announce a protocol
// switch or more responses that never come. 204 and 304 carry no body
// (RFC 9110 §15.3.5, §15.4.5), so one written for them is an error rather
// than silently dropped.
func respond(b *builder, r *draft, d *routes.Directive) {
	code, ok := b.code(d, func(c int) bool { return c >= 200 && c <= 599 }, "a final status from 200 to 599")
	m := Middleware{Kind: Respond, Code: code, Pos: b.pos(d.Pos)}
	if len(d.Args) > 1 {
		m.Arg = d.Args[1].Value
		if m.Arg != "" && (code == 204 || code == 304) {
			b.errorf(d.Args[1].Pos, "respond: status %d has no body; remove %s", code, d.Args[1])
			ok = false
		}
	}
	b.terminal(r, d, m, ok)
}

// redirectCodes are the statuses redirect and redirect_https may answer.
const redirectCodes = "301, 302, 303, 307 or 308"

func isRedirectCode(c int) bool { return c == 301 || c == 302 || c == 303 || c == 307 || c == 308 }

// redirectHTTPS reads `redirect_https [CODE] [PORT]`: requests that did
// not arrive over TLS get CODE (308 by default) to https on PORT (443 by
// default, written as ""); the others go on down the route. It does not
// end the route, so it is not a terminal line.
func redirectHTTPS(b *builder, r *draft, d *routes.Directive) {
	m := Middleware{Kind: RedirectHTTPS, Code: 308, Pos: b.pos(d.Pos)}
	ok := true
	if len(d.Args) > 0 {
		m.Code, ok = b.code(d, isRedirectCode, redirectCodes+"; for a port alone write `redirect_https 308 PORT`")
	}
	if len(d.Args) > 1 {
		p, pok := b.port(d.Name, d.Args[1])
		if pok && p != 443 {
			m.Arg = strconv.Itoa(p)
		}
		ok = ok && pok
	}
	if ok {
		r.middlewares = append(r.middlewares, m)
	}
}

func (b *builder) code(d *routes.Directive, valid func(int) bool, want string) (int, bool) {
	a := d.Args[0]
	c, err := routes.ParseInt(a.Value)
	if err != nil || !valid(c) {
		b.errorf(a.Pos, "%s: invalid status code %s (expected %s)", d.Name, a, want)
		return 0, false
	}
	return c, true
}

// terminal records a respond or redirect line: a route has at most one.
func (b *builder) terminal(r *draft, d *routes.Directive, m Middleware, ok bool) {
	if r.terminal != nil {
		b.errorf(d.Pos, "route %q already answers with `%s` (line %d): only one respond or redirect per route",
			r.name, r.terminal.Name, r.terminal.Pos.Line)
		return
	}
	r.terminal = d
	if ok {
		r.middlewares = append(r.middlewares, m)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// compressDirective reads a route's `compress { ... }` block; an empty
// block takes the defaults.
func compressDirective(b *builder, r *draft, d *routes.Directive) {
	c := &Compress{MinSize: 1 << 10, Pos: b.pos(d.Pos)}
	run(b, compressTable, c, d.Block.Directives)
	if len(c.Algorithms) == 0 {
		c.Algorithms = []string{"zstd", "br", "gzip"}
	}
	if len(c.Types) == 0 {
		c.Types = DefaultCompressTypes
	}
	r.compress = c
}

var compressTable = table[*Compress]{
	"algorithms": func(b *builder, c *Compress, d *routes.Directive) {
		for _, a := range d.Args {
			if v, ok := b.oneOf(a, "compression algorithm", []string{"zstd", "br", "gzip"}); ok && !slices.Contains(c.Algorithms, v) {
				c.Algorithms = append(c.Algorithms, v)
			}
		}
	},
	"types": func(b *builder, c *Compress, d *routes.Directive) {
		for _, a := range d.Args {
			typ, sub, ok := strings.Cut(a.Value, "/")
			if !ok || !httpsyntax.ValidToken(typ) || !httpsyntax.ValidToken(sub) {
				b.errorf(a.Pos, "types: invalid media type %q (expected type/subtype, such as text/html)", a.Value)
				continue
			}
			c.Types = append(c.Types, strings.ToLower(a.Value))
		}
	},
	"min_size": func(b *builder, c *Compress, d *routes.Directive) { b.setSizeRange(d, 0, 1<<30, &c.MinSize) },
}

// forwardAuthDirective reads a route's `forward_auth URL { ... }`.
func forwardAuthDirective(b *builder, r *draft, d *routes.Directive) {
	a := &ForwardAuth{URL: d.Args[0].Value, Timeout: 2 * time.Second, Pos: b.pos(d.Pos)}
	if err := serviceURL(a.URL); err != nil {
		b.errorf(d.Args[0].Pos, "forward_auth: %v", err)
	}
	if d.Block != nil {
		run(b, forwardAuthTable, a, d.Block.Directives)
	}
	r.forwardAuth = a
}

var forwardAuthTable = table[*ForwardAuth]{
	"timeout": func(b *builder, a *ForwardAuth, d *routes.Directive) {
		if v, ok := b.duration(d, true); ok {
			a.Timeout = v
		}
	},
	"copy_headers": func(b *builder, a *ForwardAuth, d *routes.Directive) {
		a.CopyHeaders = append(a.CopyHeaders, b.headerNames(d)...)
	},
	"cache": func(b *builder, a *ForwardAuth, d *routes.Directive) {
		if d.Args[0].Value == "off" {
			a.Cache = 0
			return
		}
		if v, ok := b.duration(d, false); ok {
			a.Cache = v
		}
	},
}

// jwtDirective reads a route's `jwt { ... }` block.
func jwtDirective(b *builder, r *draft, d *routes.Directive) {
	if r.jwtPolicy != "" {
		b.errorf(d.Pos, "route %q has both `jwt_policy` and a `jwt` block: a route checks one token policy", r.name)
	}
	r.jwt = b.jwtBlock(d, "")
}

var jwtTable = table[*JWT]{
	"jwks": func(b *builder, j *JWT, d *routes.Directive) {
		if v := d.Args[0].Value; isHTTPURL(v) {
			if err := serviceURL(v); err != nil {
				b.errorf(d.Args[0].Pos, "jwks: %v", err)
				return
			}
			j.JWKSURL = v
			return
		}
		path := b.filePath(d, 0, ReadFile)
		if path == "" {
			return
		}
		data, err := b.fs.ReadFile(path)
		if err != nil {
			b.errorf(d.Args[0].Pos, "jwks: %v", err)
			return
		}
		if err := ValidJWKS(data); err != nil {
			b.errorf(d.Args[0].Pos, "jwks: %s: %v", path, err)
			return
		}
		j.JWKS, j.JWKSFile = data, path
	},
	"issuer":   func(b *builder, j *JWT, d *routes.Directive) { j.Issuer = d.Args[0].Value },
	"audience": func(b *builder, j *JWT, d *routes.Directive) { j.Audience = d.Args[0].Value },
	"claim_header": func(b *builder, j *JWT, d *routes.Directive) {
		if !httpsyntax.ValidToken(d.Args[1].Value) {
			b.errorf(d.Args[1].Pos, "claim_header: invalid header name %q", d.Args[1].Value)
			return
		}
		j.ClaimHeaders = append(j.ClaimHeaders, [2]string{d.Args[0].Value, textproto.CanonicalMIMEHeaderKey(d.Args[1].Value)})
	},
	"leeway": func(b *builder, j *JWT, d *routes.Directive) {
		if v, ok := b.duration(d, false); ok {
			j.Leeway = v
		}
	},
	"jwks_refresh": func(b *builder, j *JWT, d *routes.Directive) { b.setDuration(d, &j.JWKSRefresh) },
	"jwks_ca":      jwksCA,
}
