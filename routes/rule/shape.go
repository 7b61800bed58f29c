package rule

import (
	"fmt"
	"net/netip"
	"net/textproto"
	"slices"
	"strings"
)

// The shape of a rule: what `edgeway validate` can tell about the set of
// requests it matches without running it. A rule is rewritten once, at
// parse time, into a disjunction of terms (its || alternatives), each a
// conjunction of matcher calls. Everything here is sound and incomplete:
// two calls are said to exclude or imply each other only where §4 makes
// it certain (two different Path values, a Path under a PathPrefix, ...);
// any other pair is taken to be independent, so an answer "can never
// match" or "covers" is always true, and a missing one proves nothing.

// maxTerms bounds the disjunctive form: a rule with more alternatives
// than this (after distributing && over ||) is not analysed at all.
const maxTerms = 64

// term is one alternative of a rule: calls that must all match.
type term []*leaf

// shape is a rule's disjunctive form, computed once by analyse.
type shape struct {
	// terms are the alternatives that may match, with the calls that
	// always match (Host(`*`)) left out: an empty term matches every
	// request. Nil when the rule never matches or ok is false.
	terms []term
	ok    bool   // false: too many alternatives to analyse
	never *Error // why no request matches; nil if it may
}

// analyse computes the shape of a parsed tree.
func analyse(n *node) shape {
	var all []term
	if k := conjunction(n); k > 0 { // most rules: one allocation per slice
		all = []term{appendLeaves(make(term, 0, k), n)}
	} else {
		var ok bool
		if all, ok = alternatives(n); !ok {
			return shape{}
		}
	}
	s := shape{ok: true, terms: all[:0]} // filtered in place
	var first *Error
	count := len(all)
	for _, t := range all {
		if why := contradiction(t); why != nil {
			if first == nil {
				first = why
			}
			continue
		}
		s.terms = append(s.terms, dropTrue(t))
	}
	if len(s.terms) == 0 {
		s.terms, s.never = nil, first
		if count > 1 {
			s.never = &Error{Offset: first.Offset, Msg: fmt.Sprintf(
				"each of its %d || alternatives is contradictory (the first: %s)", count, first.Msg)}
		}
	}
	return s
}

// conjunction returns the number of calls of n when it has no ||, else 0.
func conjunction(n *node) int {
	switch n.op {
	case opOr:
		return 0
	case opAnd:
		l, r := conjunction(n.left), conjunction(n.right)
		if l == 0 || r == 0 {
			return 0
		}
		return l + r
	}
	return 1
}

// appendLeaves appends the calls of a conjunction to t.
func appendLeaves(t term, n *node) term {
	if n.op == opLeaf {
		return append(t, n.leaf)
	}
	return appendLeaves(appendLeaves(t, n.left), n.right)
}

// alternatives distributes && over || (the tree has '!' on leaves only),
// giving up past maxTerms.
func alternatives(n *node) ([]term, bool) {
	switch n.op {
	case opOr:
		l, ok1 := alternatives(n.left)
		r, ok2 := alternatives(n.right)
		if !ok1 || !ok2 || len(l)+len(r) > maxTerms {
			return nil, false
		}
		return append(l, r...), true
	case opAnd:
		l, ok1 := alternatives(n.left)
		r, ok2 := alternatives(n.right)
		if !ok1 || !ok2 || len(l)*len(r) > maxTerms {
			return nil, false
		}
		out := make([]term, 0, len(l)*len(r))
		for _, a := range l {
			for _, b := range r {
				t := make(term, 0, len(a)+len(b))
				out = append(out, append(append(t, a...), b...))
			}
		}
		return out, true
	}
	return []term{{n.leaf}}, true
}

// contradiction explains why no request can match every call of t, or
// returns nil. The offset is that of the call found in conflict.
func contradiction(t term) *Error {
	for i, a := range t {
		if v, ok := constant(a); ok && !v {
			return &Error{Offset: a.offs[0], Msg: callString(a) + " matches no request"}
		}
		for _, b := range t[:i] {
			if excludes(b, a) {
				return &Error{Offset: a.offs[0], Msg: callString(b) + " and " + callString(a) + " cannot both match one request"}
			}
		}
	}
	return nil
}

// dropTrue returns t without the calls that match every request.
func dropTrue(t term) term {
	if !slices.ContainsFunc(t, isTrue) {
		return t
	}
	out := t[:0:0]
	for _, l := range t {
		if v, ok := constant(l); !ok || !v {
			out = append(out, l)
		}
	}
	return out
}

func isTrue(l *leaf) bool {
	v, ok := constant(l)
	return ok && v
}

// constant reports the value of a call that does not depend on the
// request: Host(`*`) and HostSNI(`*`) match everything (§4.1, §6).
func constant(l *leaf) (value, ok bool) {
	if (l.spec.name == "Host" || l.spec.name == "HostSNI") && l.args[0] == "*" {
		return !l.not, true
	}
	return false, false
}

// excludes reports whether calls a and b (each possibly negated) can never
// match one request together: a implies not-b.
func excludes(a, b *leaf) bool { return implies(a, a.not, b, !b.not) }

// implies reports whether every request that matches call a (negated when
// an) also matches call b (negated when bn).
func implies(a *leaf, an bool, b *leaf, bn bool) bool {
	switch {
	case !an && !bn:
		return impliesCall(a, b)
	case an && bn: // !a implies !b when b implies a
		return impliesCall(b, a)
	case !an && bn:
		return disjoint(a, b)
	}
	return false // a negated call implies no plain one
}

// impliesCall reports whether every request matching a matches b.
func impliesCall(a, b *leaf) bool {
	if sameCall(a, b) {
		return true
	}
	switch b.spec.name {
	case "PathPrefix": // §4: a plain string prefix
		return (a.spec.name == "Path" || a.spec.name == "PathPrefix") && strings.HasPrefix(a.args[0], b.args[0])
	case "ClientIP":
		pa, pb, ok := clientIPs(a, b)
		return ok && pb.Bits() <= pa.Bits() && pb.Contains(pa.Addr())
	}
	return false
}

// disjoint reports whether no request matches both calls a and b.
func disjoint(a, b *leaf) bool {
	na, nb := a.spec.name, b.spec.name
	pa, pb := isPathCall(na), isPathCall(nb)
	switch {
	case pa && pb:
		return pathsDisjoint(na, a.args[0], nb, b.args[0])
	case na != nb:
		return false
	}
	switch na {
	case "Method": // one request has one method, compared as buildMethod does
		return strings.ToUpper(a.args[0]) != strings.ToUpper(b.args[0])
	case "Host":
		return disjointNames(hostNames(a.args[0]), hostNames(b.args[0]))
	case "HostSNI":
		return disjointNames(sniNames(a.args[0]), sniNames(b.args[0]))
	case "ClientIP": // one peer has one address
		x, y, ok := clientIPs(a, b)
		return ok && !x.Overlaps(y)
	}
	return false // Header, Query, ALPN: a request may carry several values
}

func isPathCall(name string) bool { return name == "Path" || name == "PathPrefix" }

// pathsDisjoint compares Path and PathPrefix values: one routing path
// equals one Path value, and two prefixes of it are prefixes of each other.
func pathsDisjoint(na, a, nb, b string) bool {
	switch {
	case na == "Path" && nb == "Path":
		return a != b
	case na == "Path":
		return !strings.HasPrefix(a, b)
	case nb == "Path":
		return !strings.HasPrefix(b, a)
	}
	return !strings.HasPrefix(a, b) && !strings.HasPrefix(b, a)
}

// hostNames returns every request host that Host(v) matches, when v is a
// literal name (§4.1: the value, the value with one trailing dot removed,
// the request host with one trailing dot removed); nil for a wildcard.
func hostNames(v string) []string {
	v = strings.ToLower(v)
	if strings.HasPrefix(v, "*") {
		return nil
	}
	names := []string{v, v + "."}
	if t, ok := strings.CutSuffix(v, "."); ok {
		names = append(names, t)
	}
	return names
}

// sniNames returns a superset of the server names HostSNI(h) matches (§6:
// one trailing dot removed from h, compared case-insensitively); nil for
// a wildcard.
func sniNames(h string) []string {
	h = strings.ToLower(h)
	if strings.HasPrefix(h, "*") {
		return nil
	}
	return []string{h, strings.TrimSuffix(h, ".")}
}

// disjointNames reports whether two literal name sets share no name; a
// nil set (a wildcard) may share any.
func disjointNames(a, b []string) bool {
	if a == nil || b == nil {
		return false
	}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return false
			}
		}
	}
	return true
}

// clientIPs parses the values of two ClientIP calls.
func clientIPs(a, b *leaf) (pa, pb netip.Prefix, ok bool) {
	if a.spec.name != "ClientIP" || b.spec.name != "ClientIP" {
		return pa, pb, false
	}
	pa, err1 := parseClientIP(arg{val: a.args[0]})
	pb, err2 := parseClientIP(arg{val: b.args[0]})
	return pa, pb, err1 == nil && err2 == nil
}

// callKey names a call up to spelling: two calls with equal keys match the
// same requests. It is the identity the implication checks and CoverIndex
// use.
type callKey struct{ name, a0, a1, a2 string }

// canon returns l's key: case-insensitive values lower-cased (Host,
// HostSNI) or upper-cased (Method), header names in canonical form,
// CIDRs masked, and QueryRegexp(k) spelt Query(k), which it is (§4).
func canon(l *leaf) callKey {
	k := callKey{name: l.spec.name, a0: l.args[0]}
	if len(l.args) > 1 {
		k.a1 = l.args[1]
	}
	if len(l.args) > 2 {
		k.a2 = l.args[2]
	}
	switch k.name {
	case "Host", "HostSNI":
		k.a0 = strings.ToLower(k.a0)
	case "Method":
		k.a0 = strings.ToUpper(k.a0)
	case "Header", "HeaderRegexp":
		k.a0 = textproto.CanonicalMIMEHeaderKey(k.a0)
	case "QueryRegexp":
		if len(l.args) == 1 {
			k.name = "Query"
		}
	case "ClientIP":
		if p, err := parseClientIP(arg{val: k.a0}); err == nil {
			k.a0 = p.String()
		}
	}
	return k
}

// sameCall reports canon(a) == canon(b) without building either key.
func sameCall(a, b *leaf) bool {
	if a.spec.name != b.spec.name || len(a.args) != len(b.args) {
		return isQuery(a) && isQuery(b) && a.args[0] == b.args[0]
	}
	if len(a.args) > 1 && a.args[1] != b.args[1] {
		return false
	}
	if len(a.args) > 2 && a.args[2] != b.args[2] { // JWTClaim's value
		return false
	}
	x, y := a.args[0], b.args[0]
	switch a.spec.name {
	case "Host", "HostSNI": // ASCII values (§4.1, §6)
		return asciiEqualFold(x, y)
	case "Method", "Header", "HeaderRegexp":
		// canon changes only the case of ASCII letters.
		return x == y || asciiEqualFold(x, y) && canon(a) == canon(b)
	case "ClientIP":
		return x == y || canon(a) == canon(b)
	}
	return x == y
}

// isQuery reports whether l is Query(k) or its equal QueryRegexp(k).
func isQuery(l *leaf) bool {
	return len(l.args) == 1 && (l.spec.name == "Query" || l.spec.name == "QueryRegexp")
}

// callString writes a call back as rule text, for messages.
func callString(l *leaf) string {
	var b strings.Builder
	if l.not {
		b.WriteByte('!')
	}
	b.WriteString(l.spec.name)
	b.WriteByte('(')
	for i, a := range l.args {
		if i > 0 {
			b.WriteString(", ")
		}
		if strings.ContainsAny(a, "`\r") {
			b.WriteString(quote(a))
		} else {
			b.WriteString("`" + a + "`")
		}
	}
	b.WriteByte(')')
	return b.String()
}
