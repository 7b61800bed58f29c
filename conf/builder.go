package conf

import (
	"fmt"
	"slices"
	"time"

	"github.com/edgeway/edgeway/routes"
)

// builder turns checked directives into a Config. Every directive has one
// small handler, found by name in the table of the block it sits in; the
// routes package has already checked names and argument counts, so a
// handler only converts and validates values. Checks that need the whole
// configuration (references, duplicate addresses) run in validate.
type builder struct {
	fs      fileSystem
	cfg     *Config
	errs    []Diagnostic
	sources map[string]*routes.Source // by file name as displayed
	order   map[string]int            // load order of each file, for sorting
	seen    map[string]bool           // absolute paths already loaded
	names   map[string]map[string]routes.Pos
	refs    []ref
	addrs   []boundAddr
	// sortAt moves errors, by index in errs, to another place in the
	// sorted list (missingf).
	sortAt map[int]routes.Pos
	// tlsListeners and tcpTo are kept for the checks validate runs once
	// every block is read.
	tlsListeners []namedPos
	tcpTo        []tcpTo
}

// namedPos is a block's name and position.
type namedPos struct {
	name string
	pos  routes.Pos
}

// tcpTo is the `to UPSTREAM` line of a tcp route.
type tcpTo struct {
	route, upstream string
	pos             routes.Pos
}

// ref is a name used before it can be checked: `to UPSTREAM`,
// `listeners NAME...`.
type ref struct {
	ns   string // "upstream" or "listener"
	name string
	pos  routes.Pos
}

// boundAddr is an address something listens on, for the conflict check.
type boundAddr struct {
	owner string
	addr  string
	pos   routes.Pos
}

func newBuilder(fsys fileSystem) *builder {
	return &builder{
		fs: fsys,
		cfg: &Config{
			ShutdownGrace: 10 * time.Second,
			Log:           Log{Access: true, Format: "text", Output: "stderr", Level: "info", Sample: 1},
		},
		sources: map[string]*routes.Source{},
		order:   map[string]int{},
		seen:    map[string]bool{},
		names:   map[string]map[string]routes.Pos{},
	}
}

// handler applies one directive to the value its block builds.
type handler[T any] func(b *builder, t T, d *routes.Directive)

// table maps the directive names of one block kind to their handlers.
type table[T any] map[string]handler[T]

func run[T any](b *builder, tbl table[T], t T, directives []*routes.Directive) {
	for _, d := range directives {
		h, ok := tbl[d.Name]
		if !ok { // the vocabulary and the tables disagree: a bug, not a user error
			b.errorf(d.Pos, "internal error: no handler for %q in %s", d.Name, d.Kind)
			continue
		}
		h(b, t, d)
	}
}

func (b *builder) pos(p routes.Pos) Pos { return Pos{File: p.File, Line: p.Line, Col: p.Col} }

func (b *builder) diag(p routes.Pos, msg string) Diagnostic {
	var line string
	if src := b.sources[p.File]; src != nil {
		line = src.Line(p.Line)
	}
	return Diagnostic{Pos: b.pos(p), Msg: msg, Source: line}
}

func (b *builder) errorf(p routes.Pos, format string, args ...any) {
	b.errs = append(b.errs, b.diag(p, fmt.Sprintf(format, args...)))
}

func (b *builder) warnf(p routes.Pos, format string, args ...any) {
	b.cfg.Warnings = append(b.cfg.Warnings, b.diag(p, fmt.Sprintf(format, args...)))
}

// warnAt is warnf at the position of a block already built (Route.Pos).
func (b *builder) warnAt(p Pos, format string, args ...any) {
	b.cfg.Warnings = append(b.cfg.Warnings, Diagnostic{Pos: p, Msg: fmt.Sprintf(format, args...),
		Source: b.sources[p.File].Line(p.Line)})
}

// at returns the position offset bytes into the argument a (for errors the
// rule parser reports inside a match expression).
func (b *builder) at(a routes.Arg, offset int) routes.Pos {
	src := b.sources[a.Pos.File]
	if src == nil {
		return a.Pos
	}
	return src.Pos(a.Pos.Offset + max(0, min(offset, a.End.Offset-a.Pos.Offset)))
}

// reserve makes room for the routes and upstreams of f before its
// directives run, so that a file of 10,000 routes grows each slice and
// name table once rather than by doubling.
func (b *builder) reserve(f *routes.File) {
	var nr, nt, nu int
	for _, d := range f.Directives {
		switch d.Name {
		case "route":
			nr++
		case "tcp route":
			nt++
		case "upstream":
			nu++
		}
	}
	b.cfg.Routes = slices.Grow(b.cfg.Routes, nr)
	b.cfg.TCPRoutes = slices.Grow(b.cfg.TCPRoutes, nt)
	b.cfg.Upstreams = slices.Grow(b.cfg.Upstreams, nu)
	if b.names["route"] == nil && nr+nt > 0 {
		b.names["route"] = make(map[string]routes.Pos, nr+nt)
	}
}

// declare records a name in a namespace and reports a duplicate.
func (b *builder) declare(ns, name string, p routes.Pos) {
	if b.names[ns] == nil {
		b.names[ns] = map[string]routes.Pos{}
	}
	if first, dup := b.names[ns][name]; dup {
		b.errorf(p, "duplicate %s name %q (first defined at %s)", ns, name, first)
		return
	}
	b.names[ns][name] = p
}

// missingf reports what block d lacks, at d; it is listed after the
// errors inside the block, which are often its cause (`adr` misspelt is
// the missing addr).
func (b *builder) missingf(d *routes.Directive, format string, args ...any) {
	b.errorf(d.Pos, format, args...)
	if b.sortAt == nil {
		b.sortAt = map[int]routes.Pos{}
	}
	b.sortAt[len(b.errs)-1] = lastPos(d)
}

// lastPos is where directive d ends: its block's "}".
func lastPos(d *routes.Directive) routes.Pos {
	if d.Block != nil && d.Block.End.Line > 0 {
		return d.Block.End
	}
	return d.End()
}

func (b *builder) errorList() error {
	type keyed struct {
		d   Diagnostic
		key Pos
	}
	all := make([]keyed, len(b.errs))
	for i, d := range b.errs {
		all[i] = keyed{d, d.Pos}
		if p, ok := b.sortAt[i]; ok {
			all[i].key = b.pos(p)
		}
	}
	slices.SortStableFunc(all, func(x, y keyed) int { return b.comparePos(x.key, y.key) })
	list := make(ErrorList, len(all))
	for i, k := range all {
		list[i] = k.d
	}
	return &list
}

// sortDiags orders diagnostics by file load order, then line and column.
func (b *builder) sortDiags(list []Diagnostic) {
	slices.SortStableFunc(list, func(x, y Diagnostic) int { return b.comparePos(x.Pos, y.Pos) })
}

func (b *builder) comparePos(x, y Pos) int {
	if c := b.order[x.File] - b.order[y.File]; c != 0 {
		return c
	}
	if x.Line != y.Line {
		return x.Line - y.Line
	}
	return x.Col - y.Col
}
