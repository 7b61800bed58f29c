package routes

import (
	"fmt"
	"math"
)

// The grammar: every statement is `name args... [{ statements }]`, ended
// by a Sep. The scanner inserts a Sep before and after each "}" and at the
// end of the file, so a block may sit on one line.
//
//	file  = Sep* ( stmt Sep+ )* EOF
//	stmt  = Word ( Word | String | Expr )* block?
//	block = LBrace Sep* ( stmt Sep+ )* RBrace
//
// The parser is hand-written recursive descent over the scanner's tokens:
// the grammar is LL(1), and a generic parser generator cost a 10,000-route
// file most of its reload time (BenchmarkParse10k). The participle grammar
// in reference.go is the specification; TestReferenceAgrees and
// FuzzReferenceAgrees hold this parser to it.

// Parse reads one file of the given kind: it scans, parses and checks every
// directive against the vocabulary. It returns the directives that passed
// and every problem found (scanning recovers from errors, so one file can
// report many). File is nil only when the grammar itself failed.
func Parse(name string, text []byte, kind FileKind) (*File, ErrorList) {
	src := NewSource(name, text)
	if len(text) > math.MaxInt32 {
		return nil, ErrorList{src.errorAt(0, "file is larger than 2 GiB")}
	}
	toks, errs := scan(src)
	p := &parser{src: src, toks: toks, lines: lineCursor{src: src}}
	stmts, perr := p.file()
	if perr != nil {
		return nil, append(errs, perr)
	}
	c := &checker{src: src, file: kind}
	top := MainBlock
	if kind == RouteFile {
		top = RouteFileBlock
	}
	f := &File{Kind: kind, Source: src, Directives: c.block(top, stmts)}
	errs = append(errs, c.errs...)
	return f, sortErrors(errs)
}

// parser builds directives from the token stream. The scanner makes the
// stream fit the grammar, so its errors are a safety net.
type parser struct {
	src   *Source
	toks  []token
	i     int
	lines lineCursor
	// dirs and args are slabs the directives are cut from: one allocation
	// per chunk instead of two per directive.
	dirs []Directive
	args []Arg
}

const slabSize = 256

func (p *parser) newDirective() *Directive {
	if len(p.dirs) == 0 {
		p.dirs = make([]Directive, slabSize)
	}
	d := &p.dirs[0]
	p.dirs = p.dirs[1:]
	return d
}

func (p *parser) newArgs(n int) []Arg {
	if len(p.args) < n {
		p.args = make([]Arg, max(n, slabSize))
	}
	a := p.args[:n:n]
	p.args = p.args[n:]
	return a
}

func (p *parser) val(t *token) string { return p.src.Text[t.start:t.end] }
func (p *parser) pos(off int32) Pos   { return p.lines.pos(int(off)) }

func (p *parser) peek() *token { return &p.toks[min(p.i, len(p.toks)-1)] }

func (p *parser) file() ([]*Directive, *Error) {
	stmts, err := p.stmts()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.typ != tokEOF {
		return nil, p.unexpected(t)
	}
	return stmts, nil
}

// stmts parses `Sep* ( stmt Sep+ )*`, up to a "}" or the end of the file.
func (p *parser) stmts() ([]*Directive, *Error) {
	p.seps()
	var out []*Directive
	for p.peek().typ == tokWord {
		d, err := p.stmt()
		if err != nil {
			return nil, err
		}
		out = append(out, d)
		if t := p.peek(); t.typ != tokSep {
			return nil, p.unexpected(t)
		}
		p.seps()
	}
	return out, nil
}

func (p *parser) seps() {
	for p.peek().typ == tokSep {
		p.i++
	}
}

func (p *parser) stmt() (*Directive, *Error) {
	t := p.peek()
	p.i++
	d := p.newDirective()
	d.Name, d.Pos = p.val(t), p.pos(t.start)
	n := 0
	for k := p.i; k < len(p.toks) && isArg(p.toks[k].typ); k++ {
		n++
	}
	if n > 0 {
		d.Args = p.newArgs(n)
		for k := range d.Args {
			d.Args[k] = p.arg(&p.toks[p.i])
			p.i++
		}
	}
	if t := p.peek(); t.typ == tokLBrace {
		p.i++
		b := &Block{Pos: p.pos(t.start)}
		stmts, err := p.stmts()
		if err != nil {
			return nil, err
		}
		t := p.peek()
		if t.typ != tokRBrace {
			return nil, p.unexpected(t)
		}
		b.End = p.pos(t.start)
		p.i++
		b.Directives = stmts
		d.Block = b
	}
	return d, nil
}

func isArg(t tokType) bool { return t == tokWord || t == tokString || t == tokExpr }

func (p *parser) arg(t *token) Arg {
	a := Arg{Pos: p.pos(t.start), Value: p.val(t)}
	switch t.typ {
	case tokWord:
		a.Kind = Word
	case tokString:
		a.Kind = String
		a.Value, _ = unquote(a.Value)
	default:
		a.Kind = Expr
	}
	a.End = p.pos(t.end)
	return a
}

func (p *parser) unexpected(t *token) *Error {
	return p.src.errorAt(int(t.start), "expected a directive, got %s", describe(t.typ, p.val(t)))
}

// describe names a token the way an error message should.
func describe(typ tokType, val string) string {
	switch typ {
	case tokEOF:
		return "end of file"
	case tokSep:
		if val == ";" {
			return `";"`
		}
		return "end of line"
	case tokString:
		return "string " + val
	case tokExpr:
		return "match expression"
	}
	return fmt.Sprintf("%q", val)
}
