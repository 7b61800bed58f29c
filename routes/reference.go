package routes

import (
	"errors"
	"io"
	"math"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// This file is the normative grammar of the configuration language, written
// for participle. Parse (grammar.go) loads files with a hand-written parser
// of the same grammar because participle cost a 10,000-route file about 20
// times as long (BenchmarkParseReference10k against BenchmarkParse10k);
// TestReferenceAgrees and FuzzReferenceAgrees hold the two to the same trees
// and errors. Change the grammar here first, then the fast parser.
//
// Every statement is `name args... [{ statements }]`, ended by a Sep. The
// scanner inserts a Sep before and after each "}" and at the end of the
// file, so a block may sit on one line.
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

var refParser = participle.MustBuild[pFile](participle.Lexer(refDefinition{}), participle.UseLookahead(2))

// ParseReference is Parse done by the participle grammar: the same scanner,
// the grammar above, then the same vocabulary check. It is the
// specification Parse is tested against, not the loading path.
//
// Errors are those of Parse. A participle error (the scanner makes the
// token stream fit the grammar, so none is expected) is reported at the
// token participle names: an unexpected token as Parse words it ("expected
// a directive, got ..."), any other participle error with participle's own
// message, which Parse cannot match.
func ParseReference(name string, text []byte, kind FileKind) (*File, ErrorList) {
	src := NewSource(name, text)
	if len(text) > math.MaxInt32 {
		return nil, ErrorList{src.errorAt(0, "file is larger than 2 GiB")}
	}
	toks, errs := scan(src)
	peek, err := lexer.Upgrade(&sliceLexer{toks: refTokens(src, toks)})
	if err != nil {
		return nil, append(errs, src.errorAt(0, "%v", err))
	}
	tree, err := refParser.ParseFromLexer(peek)
	if err != nil {
		return nil, append(errs, refGrammarError(src, err))
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

// refDefinition is the participle lexer.Definition of the language: the
// scanner's token types under the names the grammar uses.
type refDefinition struct{}

// Symbols builds its map on each call: the parser is built during package
// initialisation, possibly before any package-level map would be.
func (refDefinition) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "Word": lexer.TokenType(tokWord), "String": lexer.TokenType(tokString),
		"Expr": lexer.TokenType(tokExpr), "Sep": lexer.TokenType(tokSep),
		"LBrace": lexer.TokenType(tokLBrace), "RBrace": lexer.TokenType(tokRBrace),
	}
}

// Lex scans r. It stops at the first scanning error; ParseReference scans
// itself so that it can report them all.
func (refDefinition) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	src := NewSource(filename, b)
	toks, errs := scan(src)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return &sliceLexer{toks: refTokens(src, toks)}, nil
}

// refTokens turns the scanner's tokens into participle's.
func refTokens(src *Source, toks []token) []lexer.Token {
	out := make([]lexer.Token, len(toks))
	for i, t := range toks {
		p := src.Pos(int(t.start))
		pos := lexer.Position{Filename: p.File, Offset: p.Offset, Line: p.Line, Column: p.Col}
		if t.typ == tokEOF {
			out[i] = lexer.EOFToken(pos)
			continue
		}
		out[i] = lexer.Token{Type: lexer.TokenType(t.typ), Value: src.Text[t.start:t.end], Pos: pos}
	}
	return out
}

// sliceLexer hands out tokens scanned beforehand.
type sliceLexer struct {
	toks []lexer.Token
	i    int
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	if l.i >= len(l.toks) {
		return l.toks[len(l.toks)-1], nil // EOF, again
	}
	l.i++
	return l.toks[l.i-1], nil
}

// refGrammarError rewrites a participle error into Parse's words where
// there is an equivalent (see ParseReference).
func refGrammarError(src *Source, err error) *Error {
	var ute *participle.UnexpectedTokenError
	if errors.As(err, &ute) {
		t := ute.Unexpected
		typ := tokType(t.Type)
		if t.Type == lexer.EOF {
			typ = tokEOF
		}
		return src.errorAt(t.Pos.Offset, "expected a directive, got %s", describe(typ, t.Value))
	}
	var perr participle.Error
	if errors.As(err, &perr) {
		return src.errorAt(perr.Position().Offset, "%s", perr.Message())
	}
	return src.errorAt(0, "%v", err)
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
