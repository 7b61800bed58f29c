package routes

// FileKind says which directives a file may hold at its top level.
type FileKind int

// The two kinds of file.
const (
	// MainFile is the file edgeway is started with: listeners, admin, log,
	// shutdown_grace and include, plus any upstream and route blocks.
	MainFile FileKind = iota
	// RouteFile is a file pulled in by include: upstream, route and
	// tcp route blocks only.
	RouteFile
)

// File is one parsed and checked file.
type File struct {
	Kind       FileKind
	Source     *Source
	Directives []*Directive
}

// Directive is one statement: a name, its arguments and, for blocks, the
// directives inside. "tcp route" is one directive name.
type Directive struct {
	Name  string
	Pos   Pos
	Args  []Arg
	Block *Block // nil when the directive has no block
	// Kind is the block the directive appears in.
	Kind BlockKind
}

// End returns the position just after the directive's last argument (or
// its name when it has none).
func (d *Directive) End() Pos {
	if len(d.Args) == 0 {
		p := d.Pos
		p.Offset += len(d.Name)
		p.Col += len(d.Name)
		return p
	}
	return d.Args[len(d.Args)-1].End
}

// Block is the `{ ... }` part of a directive.
type Block struct {
	Pos        Pos // of the "{"
	End        Pos // of the "}"
	Directives []*Directive
}

// ArgKind says how an argument was written.
type ArgKind int

// The kinds of argument.
const (
	Word   ArgKind = iota // a bare word
	String                // a "double-quoted" or `raw` string; Value is unquoted
	Expr                  // a match expression; Value is its exact source text
)

// Arg is one argument of a directive.
type Arg struct {
	Kind  ArgKind
	Value string
	Pos   Pos // of its first byte
	End   Pos // just after its last byte
}

// String describes the argument for messages: the word or string quoted.
func (a Arg) String() string {
	if a.Kind == Expr {
		return "match expression"
	}
	return quote(a.Value)
}
