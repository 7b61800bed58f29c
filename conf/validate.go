package conf

import (
	"net"
)

// validate runs the checks that need the whole configuration: references
// between blocks, addresses bound twice, and routes that earlier routes
// hide.
func (b *builder) validate() {
	b.checkRefs()
	b.checkAddrs()
	b.unusedUpstreams()
	b.unusedJWTs()
	b.checkTLSListeners()
	b.checkTCPRoutes()
	b.checkACMERoutes()
	if len(b.errs) == 0 {
		b.checkShadows()
	}
	if len(b.cfg.Listeners) == 0 && len(b.errs) == 0 {
		b.cfg.Warnings = append(b.cfg.Warnings, Diagnostic{Pos: Pos{File: b.firstFile()},
			Msg: "no listen block: nothing will be served"})
	}
}

func (b *builder) firstFile() string {
	for name, i := range b.order {
		if i == 0 {
			return name
		}
	}
	return b.cfg.MainFile
}

func (b *builder) checkRefs() {
	for _, r := range b.refs {
		if _, ok := b.names[r.ns][r.name]; ok {
			continue
		}
		b.errorf(r.pos, "unknown %s %q%s", r.ns, r.name, b.known(r.ns))
	}
}

// known lists the names defined in a namespace, for an unknown-name error.
func (b *builder) known(ns string) string {
	var list []string
	switch ns {
	case "upstream":
		for _, u := range b.cfg.Upstreams {
			list = append(list, u.Name)
		}
	case "listener":
		for _, l := range b.cfg.Listeners {
			list = append(list, l.Name)
		}
	case "limit":
		for _, l := range b.cfg.Limits {
			list = append(list, l.Name)
		}
	case "jwt policy":
		for _, j := range b.cfg.JWTs {
			list = append(list, j.Name)
		}
	}
	if len(list) == 0 {
		return " (none is defined)"
	}
	if len(list) > 8 {
		list = append(list[:8], "...")
	}
	s := " (defined: "
	for i, n := range list {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s + ")"
}

// checkAddrs reports two things listening on one address: the same port
// with the same host, or the same port where either side takes every
// address. Port 0 picks a free port and never collides.
func (b *builder) checkAddrs() {
	for i, x := range b.addrs {
		for _, y := range b.addrs[:i] {
			if collide(x.addr, y.addr) {
				b.errorf(x.pos, "%s listens on %s, already used by %s (%s)", x.owner, x.addr, y.owner, y.pos)
				break
			}
		}
	}
}

func collide(a, c string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hc, pc, err2 := net.SplitHostPort(c)
	if err1 != nil || err2 != nil || pa != pc || pa == "0" {
		return false
	}
	return ha == hc || wildcard(ha) || wildcard(hc)
}

func wildcard(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }

func (b *builder) unusedUpstreams() {
	used := map[string]bool{}
	for _, r := range b.refs {
		if r.ns == "upstream" {
			used[r.name] = true
		}
	}
	for _, u := range b.cfg.Upstreams {
		if !used[u.Name] {
			b.warnAt(u.Pos, "upstream %q is not used by any route", u.Name)
		}
	}
}
