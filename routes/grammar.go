package routes

import (
	"errors"
	"fmt"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar: every statement is `name args... [{ statements }]`, ended
// by a Sep. The scanner inserts a Sep before and after each "}" and at the
// end of the file, so a block may sit on one line.
type pFile struct {
	Stmts []*pStmt `parser:"Sep* ( @@ Sep+ )*"`
}

type pStmt struct {
	Pos   lexer.Position
	Name  string  `parser:"@Word"`
	Args  []*pArg `parser:"@@*"`
	Block *pBlock `parser:"@@?"`
}

type pArg struct {
	Pos  lexer.Position
	Word *string `parser:"  @Word"`
	Str  *string `parser:"| @String"`
	Expr *string `parser:"| @Expr"`
}

type pBlock struct {
	Pos   lexer.Position
	Stmts []*pStmt `parser:"LBrace Sep* ( @@ Sep+ )* RBrace"`
}

var parser = participle.MustBuild[pFile](participle.Lexer(definition{}), participle.UseLookahead(2))

// Parse reads one file of the given kind: it scans, parses and checks every
// directive against the vocabulary. It returns the directives that passed
// and every problem found (scanning recovers from errors, so one file can
// report many). File is nil only when the grammar itself failed.
func Parse(name string, text []byte, kind FileKind) (*File, ErrorList) {
	src := NewSource(name, text)
	toks, errs := scan(src)
	peek, err := lexer.Upgrade(&sliceLexer{toks: toks})
	if err != nil {
		return nil, append(errs, src.errorAt(0, "%v", err))
	}
	tree, err := parser.ParseFromLexer(peek)
	if err != nil {
		return nil, append(errs, grammarError(src, err))
	}
	c := &checker{src: src, file: kind}
	top := MainBlock
	if kind == RouteFile {
		top = RouteFileBlock
	}
	f := &File{Kind: kind, Source: src, Directives: c.block(top, convertStmts(src, tree.Stmts))}
	errs = append(errs, c.errs...)
	return f, sortErrors(errs)
}

// grammarError rewrites a participle error into plain words. The scanner
// makes the token stream fit the grammar, so this is a safety net.
func grammarError(src *Source, err error) *Error {
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		return src.errorAt(ute.Unexpected.Pos.Offset, "expected a directive, got %s", describe(ute.Unexpected))
	}
	var perr participle.Error
	if errors.As(err, &perr) {
		return src.errorAt(perr.Position().Offset, "%s", perr.Message())
	}
	return src.errorAt(0, "%v", err)
}

// describe names a token the way an error message should.
func describe(t lexer.Token) string {
	switch t.Type {
	case lexer.EOF:
		return "end of file"
	case tokSep:
		if t.Value == ";" {
			return `";"`
		}
		return "end of line"
	case tokString:
		return "string " + t.Value
	case tokExpr:
		return "match expression"
	}
	return fmt.Sprintf("%q", t.Value)
}

func convertStmts(src *Source, stmts []*pStmt) []*Directive {
	out := make([]*Directive, 0, len(stmts))
	for _, st := range stmts {
		d := &Directive{Name: st.Name, Pos: convertPos(src, st.Pos)}
		for _, a := range st.Args {
			d.Args = append(d.Args, convertArg(src, a))
		}
		if st.Block != nil {
			d.Block = &Block{Pos: convertPos(src, st.Block.Pos), Directives: convertStmts(src, st.Block.Stmts)}
		}
		out = append(out, d)
	}
	return out
}

func convertArg(src *Source, a *pArg) Arg {
	arg := Arg{Pos: convertPos(src, a.Pos)}
	var raw string
	switch {
	case a.Word != nil:
		arg.Kind, raw, arg.Value = Word, *a.Word, *a.Word
	case a.Str != nil:
		arg.Kind, raw = String, *a.Str
		arg.Value, _ = unquote(raw)
	default:
		arg.Kind, raw, arg.Value = Expr, *a.Expr, *a.Expr
	}
	arg.End = src.Pos(arg.Pos.Offset + len(raw))
	return arg
}

func convertPos(src *Source, p lexer.Position) Pos {
	return Pos{File: src.Name, Offset: p.Offset, Line: p.Line, Col: p.Column}
}
