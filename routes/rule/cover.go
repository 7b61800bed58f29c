package rule

import "math"

// NeverMatches explains why no request (or connection) can match the
// rule, such as Host(`a`) && Host(`b`), Path(`/a`) && Path(`/b`) or
// Method(`GET`) && Method(`POST`); nil when the rule may match. Offset is
// that of the argument of the call found in conflict. The check is sound
// but not complete: nil proves nothing.
func (r *Rule) NeverMatches() *Error { return r.shape.never }

// Coverage says how much of what one rule matches another matches too.
type Coverage int

// The answers of Covers.
const (
	// CoversNone: the analysis found a request that the later rule may
	// match and the earlier may not (or could not tell).
	CoversNone Coverage = iota
	// CoversAllButAsterisk: every request but those of asterisk form
	// ("OPTIONS *", whose routing path is empty) that the later rule
	// matches, the earlier matches too. It comes from PathPrefix(`/`),
	// which matches every other request.
	CoversAllButAsterisk
	// CoversAll: every request the later rule matches, the earlier
	// matches too.
	CoversAll
)

// Covers reports whether every request that later matches is matched by r
// too, so that a route with rule later, tried after one with r, is never
// chosen. Both rules must be of one Kind. It is sound but not complete:
// CoversNone proves nothing. A rule that never matches is covered by
// nothing (NeverMatches says so instead).
func (r *Rule) Covers(later *Rule) Coverage {
	if r.kind != later.kind || !r.shape.ok || !later.shape.ok || len(later.shape.terms) == 0 {
		return CoversNone
	}
	if coversTerms(r.shape.terms, later.shape.terms, false) {
		return CoversAll
	}
	if r.kind == HTTP && coversTerms(r.shape.terms, later.shape.terms, true) {
		return CoversAllButAsterisk
	}
	return CoversNone
}

// coversTerms reports whether each alternative of later implies some
// alternative of earlier; slash adds "the routing path starts with /".
func coversTerms(earlier, later []term, slash bool) bool {
	for _, t := range later {
		covered := false
		for _, e := range earlier {
			if termImplies(t, e, slash) {
				covered = true
				break
			}
		}
		if !covered {
			return false
		}
	}
	return true
}

// rootPrefix is PathPrefix(`/`): every routing path but the empty one of
// an "OPTIONS *" request starts with "/".
var rootPrefix = &leaf{spec: httpNames["PathPrefix"], args: []string{"/"}, offs: []int{0}}

// termImplies reports whether every request matching all calls of t
// matches all calls of e.
func termImplies(t, e term, slash bool) bool {
	for _, c := range e {
		if !termImpliesCall(t, c, slash) {
			return false
		}
	}
	return true
}

func termImpliesCall(t term, c *leaf, slash bool) bool {
	for _, l := range t {
		if implies(l, l.not, c, c.not) {
			return true
		}
	}
	return slash && implies(rootPrefix, false, c, c.not)
}

// CoverIndex files rules so that the ones that might cover a given rule
// (Covers) are found without comparing it with every rule filed. Each
// alternative of a filed rule is kept under the key of one of its plain
// (not negated) calls, whichever has the fewest rules so far; a rule can
// only be covered by one whose alternatives' keys its own calls name (or
// by one with an alternative that has no plain call at all, such as
// Host(`*`), kept apart). The zero value is ready to use; a CoverIndex is
// not safe for concurrent use.
type CoverIndex struct {
	byKey map[callKey][]int32 // calls other than Path and PathPrefix
	paths trieNode            // Path (exact) and PathPrefix (prefix) values
	slash []int32             // PathPrefix(`/`)
	broad []int32             // rules with an alternative of negated calls only

	scratch [][]int32 // lookups' lists, kept from one call to the next
}

// Add files r under id. Ids must be added in increasing order, from 0 to
// math.MaxInt32. Rules that never match, or are too large to analyse,
// cover nothing and are not filed.
func (x *CoverIndex) Add(id int, r *Rule) {
	if !r.shape.ok || id < 0 || id > math.MaxInt32 {
		return
	}
	if x.byKey == nil {
		x.byKey = map[callKey][]int32{}
	}
	for _, t := range r.shape.terms {
		k, ok := x.fileKey(t)
		if !ok {
			x.broad = addRank(x.broad, int32(id))
			continue
		}
		x.file(k, int32(id))
	}
}

// file adds id under k.
func (x *CoverIndex) file(k callKey, id int32) {
	switch {
	case k.name == "PathPrefix" && k.a0 == "/":
		x.slash = addRank(x.slash, id)
	case k.name == "PathPrefix":
		n := x.paths.insert(k.a0)
		n.prefix = addRank(n.prefix, id)
	case k.name == "Path":
		n := x.paths.insert(k.a0)
		n.exact = addRank(n.exact, id)
	default:
		x.byKey[k] = addRank(x.byKey[k], id)
	}
}

// fileKey picks the key of t's plain call with the fewest rules filed.
func (x *CoverIndex) fileKey(t term) (callKey, bool) {
	var best callKey
	n, found := 0, false
	for _, l := range t {
		if l.not {
			continue
		}
		k := canon(l)
		if m := x.filed(k); !found || m < n {
			best, n, found = k, m, true
		}
	}
	return best, found
}

// filed returns how many ids are filed under k.
func (x *CoverIndex) filed(k callKey) int {
	switch {
	case k.name == "PathPrefix" && k.a0 == "/":
		return len(x.slash)
	case isPathCall(k.name):
		n := x.paths.find(k.a0)
		if n == nil {
			return 0
		}
		if k.name == "Path" {
			return len(n.exact)
		}
		return len(n.prefix)
	}
	return len(x.byKey[k])
}

// Candidates appends to dst, in increasing order and once each, the first
// limit ids of the filed rules that might cover r: the only ones Covers
// can find covering it. Reusing dst across calls saves allocations.
func (x *CoverIndex) Candidates(r *Rule, limit int, dst []int) []int {
	if !r.shape.ok {
		return dst
	}
	lists := x.lookups(r)
	last := int32(-1)
	for n := 0; n < limit; {
		best := -1
		for i, l := range lists {
			if len(l) > 0 && (best < 0 || l[0] < lists[best][0]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		id := lists[best][0]
		lists[best] = lists[best][1:]
		if id != last {
			dst = append(dst, int(id))
			last = id
			n++
		}
	}
	x.scratch = lists[:0]
	return dst
}

// lookups gathers the id lists filed under every key a call of r implies:
// the call's own, and for Path(q) or PathPrefix(q) the PathPrefix of
// every prefix of q (one walk down the tree of path values). PathPrefix(`/`)
// is looked up for every HTTP rule: it covers all but "OPTIONS *" of any
// rule (CoversAllButAsterisk).
func (x *CoverIndex) lookups(r *Rule) [][]int32 {
	lists := x.scratch[:0]
	if len(x.broad) > 0 {
		lists = append(lists, x.broad)
	}
	if r.kind == HTTP && len(x.slash) > 0 {
		lists = append(lists, x.slash)
	}
	for _, t := range r.shape.terms {
		for _, l := range t {
			switch {
			case l.not:
			case isPathCall(l.spec.name):
				lists = x.paths.collect(l.args[0], lists)
			default:
				if ids := x.byKey[canon(l)]; len(ids) > 0 {
					lists = append(lists, ids)
				}
			}
		}
	}
	return lists
}
