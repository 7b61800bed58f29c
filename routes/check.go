package routes

import (
	"fmt"
	"slices"
	"strings"
)

// checker holds each directive against the vocabulary: known name, allowed
// in this place and file, the right number of arguments, a block where one
// belongs and none elsewhere, no repeats of a single-use directive. A
// directive that fails is reported and left out of the AST, so conf only
// sees well-formed directives.
type checker struct {
	src  *Source
	file FileKind
	errs ErrorList
}

func (c *checker) errorf(p Pos, format string, args ...any) {
	c.errs = append(c.errs, c.src.errorAt(p.Offset, format, args...))
}

func (c *checker) block(kind BlockKind, dirs []*Directive) []*Directive {
	out := make([]*Directive, 0, len(dirs))
	var seenBuf [16]seenName
	seen := seenSet(seenBuf[:0])
	var partsBuf [4]*Directive
	parts := partsBuf[:0]
	for i, d := range dirs {
		var next *Directive
		if i+1 < len(dirs) {
			next = dirs[i+1]
		}
		parts = split(kind, compound(d), parts[:0])
		for _, part := range parts {
			if c.check(kind, part, next, seen) {
				seen = seen.add(part.Name, part.Pos)
				out = append(out, part)
			}
		}
	}
	return out
}

// seenSet records the directives a block has had, for the single-use
// check. Blocks hold a handful of directive names, so a list searched in
// order beats a map (one per block of a 10,000-route file).
type seenSet []seenName

type seenName struct {
	name string
	pos  Pos
}

func (s seenSet) get(name string) (Pos, bool) {
	for _, n := range s {
		if n.name == name {
			return n.pos, true
		}
	}
	return Pos{}, false
}

func (s seenSet) add(name string, p Pos) seenSet {
	if _, ok := s.get(name); ok {
		return s
	}
	return append(s, seenName{name, p})
}

// compound joins `tcp route` into one directive name.
func compound(d *Directive) *Directive {
	if d.Name == "tcp" && len(d.Args) > 0 && d.Args[0].Kind == Word && d.Args[0].Value == "route" {
		d.Name, d.Args = "tcp route", d.Args[1:]
	}
	return d
}

// split cuts a line holding several directives (`listen :9900 token_file /x`)
// where an argument beyond the first directive's share names another
// directive of the same place.
func split(kind BlockKind, d *Directive, out []*Directive) []*Directive {
	for {
		spec, ok := lookup(kind, d.Name)
		if !ok {
			return append(out, d)
		}
		n := spec.count(kind, d.Args)
		if n >= len(d.Args) || !isDirective(kind, d.Args[n]) {
			return append(out, d)
		}
		head := *d
		head.Args, head.Block = d.Args[:n], nil
		out = append(out, &head)
		d = compound(&Directive{Name: d.Args[n].Value, Pos: d.Args[n].Pos, Args: d.Args[n+1:], Block: d.Block})
	}
}

// count returns how many of args belong to the directive.
func (s Spec) count(kind BlockKind, args []Arg) int {
	if s.take != nil {
		return min(s.take(args), len(args))
	}
	if s.Max >= 0 {
		return min(s.Max, len(args))
	}
	for i := s.Min; i < len(args); i++ {
		if isDirective(kind, args[i]) {
			return i
		}
	}
	return len(args)
}

func isDirective(kind BlockKind, a Arg) bool {
	if a.Kind != Word {
		return false
	}
	_, ok := lookup(kind, a.Value)
	if !ok && a.Value == "tcp" {
		_, ok = lookup(kind, "tcp route")
	}
	return ok
}

func (c *checker) check(kind BlockKind, d *Directive, next *Directive, seen seenSet) bool {
	spec, ok := lookup(kind, d.Name)
	if !ok {
		c.unknown(kind, d)
		return false
	}
	if !c.arity(spec, d) || !c.blockShape(spec, d, next) {
		if spec.Block != "" && d.Block != nil {
			c.block(spec.Block, d.Block.Directives) // report what is inside too
		}
		return false
	}
	if first, dup := seen.get(d.Name); dup && !spec.Repeat {
		c.errorf(d.Pos, "duplicate %q in %s (first at line %d)", d.Name, kind, first.Line)
		return false
	}
	d.Kind = kind
	if d.Block != nil {
		d.Block.Directives = c.block(spec.Block, d.Block.Directives)
	}
	return true
}

func (c *checker) unknown(kind BlockKind, d *Directive) {
	switch _, tcp := lookup(kind, "tcp route"); {
	case kind == RouteFileBlock && mainOnly(d.Name):
		c.errorf(d.Pos, "%q is only allowed in the main file", d.Name)
	case d.Name == "tcp" && tcp:
		got := "end of line"
		if len(d.Args) > 0 {
			got = d.Args[0].String()
		}
		c.errorf(d.Pos, `expected "route" after "tcp", got %s`, got)
	default:
		c.errorf(d.Pos, "unknown directive %q in %s (expected %s)%s", d.Name, kind, names(kind), suggest(kind, d.Name))
	}
}

func (c *checker) arity(spec Spec, d *Directive) bool {
	n := len(d.Args)
	if spec.take != nil {
		n = spec.take(d.Args)
	} else if spec.Max >= 0 {
		n = min(spec.Max, n)
	}
	switch {
	case len(d.Args) < spec.Min || n > len(d.Args):
		if d.Block != nil {
			c.errorf(d.Block.Pos, `expected %s after %q, got "{"`, spec.Usage, d.Name)
		} else {
			c.errorf(d.End(), "expected %s after %q", spec.Usage, d.Name)
		}
		return false
	case spec.Max >= 0 && len(d.Args) > n:
		extra := d.Args[n]
		if spec.Block != "" {
			c.errorf(extra.Pos, `expected "{" after %s, got %s`, blockLabel(spec), extra)
		} else {
			c.errorf(extra.Pos, `expected a new line or ";" after %s, got %s`, usage(spec), extra)
		}
		return false
	}
	return true
}

func (c *checker) blockShape(spec Spec, d *Directive, next *Directive) bool {
	switch {
	case spec.Block != "" && d.Block == nil:
		if next != nil {
			c.errorf(next.Pos, `expected "{" after %s, got %q`, blockLabel(spec), next.Name)
		} else {
			c.errorf(d.End(), `expected "{" after %s`, blockLabel(spec))
		}
		return false
	case spec.Block == "" && d.Block != nil:
		c.errorf(d.Block.Pos, `unexpected "{": %q takes no block`, d.Name)
		return false
	}
	return true
}

func blockLabel(s Spec) string {
	if s.Min > 0 {
		return s.Name + " name"
	}
	return fmt.Sprintf("%q", s.Name)
}

func usage(s Spec) string {
	if s.Usage == "" {
		return s.Name
	}
	return s.Name + " " + s.Usage
}

func names(kind BlockKind) string {
	var ns []string
	for _, s := range vocabulary[kind] {
		ns = append(ns, s.Name)
	}
	return strings.Join(ns, ", ")
}

// suggest proposes the closest known name for a likely typo.
func suggest(kind BlockKind, name string) string {
	best, bestD := "", 3
	for _, s := range vocabulary[kind] {
		if d := distance(name, s.Name); d < bestD && d < len(s.Name)/2+1 {
			best, bestD = s.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// sortErrors puts errors in source order and keeps only the first error at
// any one position (a missing "{" also makes the next line misplaced).
func sortErrors(errs ErrorList) ErrorList {
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Pos.Offset - b.Pos.Offset })
	return slices.CompactFunc(errs, func(a, b *Error) bool { return a.Pos.Offset == b.Pos.Offset })
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
