package conf

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/edgeway/edgeway/routes/rule"
)

// Shadowed routes. On each listener the router tries the routes that serve
// it by priority, higher first, ties in definition order, and the first
// whose rule matches takes the request: nothing but the rule decides
// (router.Snapshot; redirect_https answers or goes on within its route),
// so a route is never reached on a listener where an earlier route's rule
// matches every request its own could. rule.Rule.Covers says when that is
// certain; this file finds the pairs to ask about and words the warning.

// maxShadowCandidates bounds how many earlier routes are compared with
// each route, so that a file of many routes the index cannot tell apart
// (10,000 rules such as !Header(`X`, `n`), of negated calls only) still
// costs a linear check; a shadow past the bound is not reported, which
// only ever loses a warning.
const maxShadowCandidates = 64

// shadowRoute is what the check reads of a route of either kind.
type shadowRoute struct {
	name      string
	rule      *rule.Rule
	priority  int
	listeners []string // the listeners that serve it; never empty
	pos       Pos
}

// shadow is an earlier route that covers a later one on some listeners.
type shadow struct {
	by    *shadowRoute
	cover rule.Coverage
	on    []string
}

// checkShadows warns about routes that earlier routes hide on some or all
// of the listeners that serve them. validate should call it once the
// configuration has no errors.
func (b *builder) checkShadows() {
	all := make([]string, len(b.cfg.Listeners))
	for i, l := range b.cfg.Listeners {
		all[i] = l.Name
	}
	rs := make([]shadowRoute, 0, len(b.cfg.Routes))
	for _, r := range b.cfg.Routes {
		rs = append(rs, shadowRoute{r.Name, r.Rule, r.Priority, served(r.Listeners, all), r.Pos})
	}
	b.shadows("route", "request", rs)
	tls := make([]string, len(b.tlsListeners))
	for i, l := range b.tlsListeners {
		tls[i] = l.name
	}
	rs = rs[:0]
	for _, r := range b.cfg.TCPRoutes {
		// Only TLS listeners reach a tcp route (checkTCPRoutes).
		on := slices.DeleteFunc(slices.Clone(served(r.Listeners, all)), func(n string) bool { return !slices.Contains(tls, n) })
		if len(on) > 0 {
			rs = append(rs, shadowRoute{r.Name, r.Rule, r.Priority, on, r.Pos})
		}
	}
	b.shadows("tcp route", "connection", rs)
}

// served resolves a route's listeners line: none means every listener.
func served(names, all []string) []string {
	if len(names) == 0 {
		return all
	}
	return names
}

// shadows checks routes of one kind in the order the router tries them;
// label and what ("request", "connection") word the warnings.
func (b *builder) shadows(label, what string, rs []shadowRoute) {
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	// As rule's tables order them: priority descending, ties in order.
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(rs[y].priority, rs[x].priority) })
	var idx rule.CoverIndex
	var cands []int
	for rank, i := range order {
		l := &rs[i]
		if l.rule == nil || l.rule.NeverMatches() != nil {
			continue // never matches: warned about at its match line
		}
		cands = idx.Candidates(l.rule, maxShadowCandidates, cands[:0])
		if found := shadowsOf(l, rs, order, cands); found != nil {
			b.warnAt(l.pos, "%s", shadowMessage(label, what, l, found))
		}
		idx.Add(rank, l.rule)
	}
}

// shadowsOf returns the earlier routes that cover l, each with the
// listeners it covers l on (the first in the router's order for each);
// nil when none does. cands are the ranks of the earlier routes that
// might, in increasing order.
func shadowsOf(l *shadowRoute, rs []shadowRoute, order, cands []int) []shadow {
	var found []shadow
	left := len(l.listeners)
	for _, rank := range cands {
		e := &rs[order[rank]]
		if !slices.ContainsFunc(l.listeners, func(n string) bool { return stillOpen(n, e, found) }) {
			continue
		}
		c := e.rule.Covers(l.rule)
		if c == rule.CoversNone {
			continue
		}
		on := slices.DeleteFunc(slices.Clone(l.listeners), func(n string) bool { return !stillOpen(n, e, found) })
		found = append(found, shadow{by: e, cover: c, on: on})
		if left -= len(on); left == 0 {
			break
		}
	}
	return found
}

// stillOpen reports whether e serves listener n and no shadow found so far
// covers it there.
func stillOpen(n string, e *shadowRoute, found []shadow) bool {
	return slices.Contains(e.listeners, n) &&
		!slices.ContainsFunc(found, func(s shadow) bool { return slices.Contains(s.on, n) })
}

// shadowMessage words the warning for l, hidden by found:
//
//	route "hello" (priority 14) is never reached: route "default"
//	(priority 15) on listener web matches every request it could; give
//	"hello" a priority above 15 or narrow "default"
//
// When other listeners still reach l, "never reached" names the ones
// that do not, and the advice adds serving l only on the others.
func shadowMessage(label, what string, l *shadowRoute, found []shadow) string {
	asterisk, top := false, found[0].by.priority
	by := make([]string, len(found))
	names := make([]string, len(found))
	var hidden []string
	for i, s := range found {
		asterisk = asterisk || s.cover == rule.CoversAllButAsterisk
		top = max(top, s.by.priority)
		by[i] = fmt.Sprintf("%s %q (priority %d) on %s", label, s.by.name, s.by.priority, listenerList(s.on))
		names[i] = fmt.Sprintf("%q", s.by.name)
		hidden = append(hidden, s.on...)
	}
	partial := len(hidden) < len(l.listeners)
	var m strings.Builder
	fmt.Fprintf(&m, "%s %q (priority %d) is never reached", label, l.name, l.priority)
	if partial {
		m.WriteString(" on " + listenerList(inOrder(hidden, l.listeners)))
	}
	if asterisk {
		m.WriteString(` (but by "OPTIONS *" requests)`)
	}
	verb, every := "matches", "every "+what+" it could"
	if len(found) > 1 {
		verb = "match"
	}
	if asterisk {
		every = "every other " + what + " it could"
	}
	fmt.Fprintf(&m, ": %s %s %s; give %q a priority above %d", joinAnd(by), verb, every, l.name, top)
	if partial {
		fmt.Fprintf(&m, ", narrow %s, or serve %q on its other listeners only", joinAnd(names), l.name)
	} else {
		fmt.Fprintf(&m, " or narrow %s", joinAnd(names))
	}
	return m.String()
}

// inOrder returns the names of some in the order of all.
func inOrder(some, all []string) []string {
	out := make([]string, 0, len(some))
	for _, n := range all {
		if slices.Contains(some, n) {
			out = append(out, n)
		}
	}
	return out
}

// listenerList writes "listener a" or "listeners a, b and c".
func listenerList(names []string) string {
	if len(names) == 1 {
		return "listener " + names[0]
	}
	return "listeners " + joinAnd(names)
}

// joinAnd joins "a", "a and b", "a, b and c".
func joinAnd(list []string) string {
	if len(list) < 2 {
		return strings.Join(list, "")
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}
