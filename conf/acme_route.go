package conf

import (
	"slices"
	"strings"

	"github.com/edgeway/edgeway/routes"
)

// The route-level `acme on|off` line: a route that says `acme on` has the
// literal names of its Host matchers ordered by the acme block. tcp routes
// have no such line: they pass TLS through, so edgeway's certificate would
// never be served for their names.

// routeACME records the route for the acme block, which may come before
// or after it (route files are included anywhere in the main file).
func routeACME(b *builder, r *draft, d *routes.Directive) {
	var on bool
	b.setSwitch(d, &on)
	if !on {
		return
	}
	if b.cfg.TLS != nil && b.cfg.TLS.ACME != nil {
		if !slices.Contains(b.cfg.TLS.ACME.Routes, r.name) {
			b.cfg.TLS.ACME.Routes = append(b.cfg.TLS.ACME.Routes, r.name)
		}
		return
	}
	if b.names[acmeRouteNS] == nil {
		b.names[acmeRouteNS] = map[string]routes.Pos{}
	}
	b.names[acmeRouteNS][r.name] = d.Pos
}

// checkACMERoutes reports `acme on` lines without an acme block to order
// their names. validate should call it.
func (b *builder) checkACMERoutes() {
	if b.cfg.TLS != nil && b.cfg.TLS.ACME != nil {
		return
	}
	for name, pos := range b.names[acmeRouteNS] {
		b.errorf(pos, "route %q: acme on needs an acme block in the tls block", name)
	}
}

// ACMENames returns every name the acme block orders: its names line,
// then the literal Host names of the routes that say
// `acme on`, without duplicates. Nil without an acme block.
func (c *Config) ACMENames() []string {
	if c.TLS == nil || c.TLS.ACME == nil {
		return nil
	}
	a := c.TLS.ACME
	names := slices.Clone(a.Names)
	add := func(route, text string) {
		if slices.Contains(a.Routes, route) {
			for _, h := range LiteralHosts(text) {
				if !slices.Contains(names, h) {
					names = append(names, h)
				}
			}
		}
	}
	for _, r := range c.Routes {
		add(r.Name, r.RuleText)
	}
	return names
}

// LiteralHosts returns the lower-cased names of the Host(`...`) and
// HostSNI(`...`) matchers of a rule text that a certificate can be
// ordered for: not negated (!Host), not a wildcard, not an IP address.
// Regexp matchers name no literal host and are skipped.
func LiteralHosts(rule string) []string {
	var out []string
	for i := 0; i < len(rule); {
		name, arg, next, ok := nextHostCall(rule, i)
		if !ok {
			break
		}
		i = next
		if name < 0 || (name > 0 && rule[name-1] == '!') {
			continue
		}
		h := strings.ToLower(arg)
		if validACMEName(h) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// nextHostCall finds the next `Host(` or `HostSNI(` at or after i, not
// part of a longer identifier, and its quoted argument. name is where the
// matcher's name starts (-1 when the call has no plain quoted argument),
// next where to go on scanning.
func nextHostCall(rule string, i int) (name int, arg string, next int, ok bool) {
	for {
		j := strings.Index(rule[i:], "Host")
		if j < 0 {
			return 0, "", 0, false
		}
		start := i + j
		rest := rule[start+len("Host"):]
		rest, _ = strings.CutPrefix(rest, "SNI")
		i = start + 4
		if start > 0 && isIdentByte(rule[start-1]) || !strings.HasPrefix(rest, "(") {
			continue
		}
		after := len(rule) - len(rest) + 1
		s := strings.TrimLeft(rule[after:], " \t")
		if s == "" || (s[0] != '`' && s[0] != '"') {
			return -1, "", after, true
		}
		end := strings.IndexByte(s[1:], s[0])
		if end < 0 {
			return 0, "", 0, false
		}
		return start, s[1 : 1+end], len(rule) - len(s) + end + 2, true
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z'
}
