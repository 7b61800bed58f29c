package routes

import (
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
)

// Token types of the configuration language. Comments are dropped by the
// scanner; newlines and ';' both become Sep.
const (
	tokWord lexer.TokenType = iota + 1
	tokString
	tokExpr // the text of a match expression, exactly as written
	tokSep
	tokLBrace
	tokRBrace
)

// definition is the participle lexer.Definition of the language. The scanner
// is hand-written because the end of a match expression depends on its
// parentheses and operators, which a regexp lexer cannot follow.
type definition struct{}

// Symbols builds its map on each call: the parser is built during package
// initialisation, possibly before any package-level map would be.
func (definition) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF": lexer.EOF, "Word": tokWord, "String": tokString, "Expr": tokExpr,
		"Sep": tokSep, "LBrace": tokLBrace, "RBrace": tokRBrace,
	}
}

func (definition) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	toks, errs := scan(NewSource(filename, b))
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return &sliceLexer{toks: toks}, nil
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

// brace is an open "{"; a dropped one (where no directive opened it) mutes
// its contents.
type brace struct {
	off     int
	dropped bool
}

// scanner turns a source into tokens. It recovers from every problem it
// finds (recording an Error) and guarantees the token stream has the shape
// the grammar expects: a statement starts with a Word, braces balance, a
// Sep comes before and after every "}" and before EOF.
type scanner struct {
	src    *Source
	text   string
	off    int
	toks   []lexer.Token
	errs   ErrorList
	open   []brace // the open braces
	mute   int     // number of dropped braces on the stack
	inStmt bool    // a statement has started since the last Sep or brace
	skip   bool    // drop tokens until the next Sep (after a bad statement start)
}

func scan(src *Source) ([]lexer.Token, ErrorList) {
	s := &scanner{src: src, text: src.Text}
	for s.off < len(s.text) {
		s.step()
	}
	s.eof()
	return s.toks, s.errs
}

func (s *scanner) step() {
	switch c := s.text[s.off]; c {
	case ' ', '\t', '\r', '\f', '\v':
		s.off++
	case '\n', ';':
		s.sep(s.off, s.off+1)
		s.off++
	case '#':
		s.off = lineEnd(s.text, s.off)
	case '{':
		s.lbrace()
	case '}':
		s.rbrace()
	case '"', '`':
		s.str()
	default:
		s.word()
	}
}

func (s *scanner) errorf(off int, format string, args ...any) {
	s.errs = append(s.errs, s.src.errorAt(off, format, args...))
}

func (s *scanner) emit(typ lexer.TokenType, start, end int) {
	if s.mute > 0 {
		return
	}
	p := s.src.Pos(start)
	s.toks = append(s.toks, lexer.Token{Type: typ, Value: s.text[start:end],
		Pos: lexer.Position{Filename: p.File, Offset: p.Offset, Line: p.Line, Column: p.Col}})
}

func (s *scanner) sep(start, end int) {
	s.emit(tokSep, start, end)
	s.inStmt, s.skip = false, false
}

func (s *scanner) lbrace() {
	start := s.off
	s.off++
	if s.mute > 0 || s.skip || (!s.inStmt && !s.braceOnNextLine()) {
		if s.mute == 0 && !s.skip {
			s.errorf(start, `unexpected "{" (expected a directive name before it)`)
		}
		s.open = append(s.open, brace{start, true})
		s.mute++
		return
	}
	s.open = append(s.open, brace{start, false})
	s.emit(tokLBrace, start, s.off)
	s.inStmt = false
}

// braceOnNextLine accepts a "{" on the line after its directive by removing
// the newlines in between.
func (s *scanner) braceOnNextLine() bool {
	n := len(s.toks)
	for n > 0 && s.toks[n-1].Type == tokSep && s.toks[n-1].Value == "\n" {
		n--
	}
	if n == len(s.toks) || n == 0 {
		return false
	}
	switch s.toks[n-1].Type {
	case tokWord, tokString, tokExpr:
		s.toks = s.toks[:n]
		return true
	}
	return false
}

func (s *scanner) rbrace() {
	start := s.off
	s.off++
	if len(s.open) == 0 {
		s.errorf(start, `unexpected "}" (no block is open)`)
		return
	}
	b := s.open[len(s.open)-1]
	s.open = s.open[:len(s.open)-1]
	if b.dropped {
		s.mute--
		return
	}
	s.emit(tokSep, start, start)
	s.emit(tokRBrace, start, s.off)
	s.sep(s.off, s.off)
}

func (s *scanner) eof() {
	end := len(s.text)
	for i := len(s.open) - 1; i >= 0; i-- {
		if s.open[i].dropped {
			s.mute--
			continue
		}
		s.errorf(s.open[i].off, `"{" is never closed (expected "}" before end of file)`)
		s.emit(tokSep, end, end)
		s.emit(tokRBrace, end, end)
	}
	s.open = nil
	s.emit(tokSep, end, end)
	p := s.src.Pos(end)
	s.toks = append(s.toks, lexer.EOFToken(lexer.Position{Filename: p.File, Offset: p.Offset, Line: p.Line, Column: p.Col}))
}

func (s *scanner) str() {
	start := s.off
	end, ok := stringEnd(s.text, start, false)
	s.off = end
	if !ok {
		if s.text[start] == '"' {
			s.errorf(start, `unterminated string (missing closing '"' before end of line)`)
		} else {
			s.errorf(start, "unterminated raw string (missing closing '`')")
		}
	} else if _, bad := unquote(s.text[start:end]); bad >= 0 {
		s.errorf(start+bad, "invalid escape sequence in string")
	}
	s.token(tokString, start, end)
}

func (s *scanner) word() {
	start := s.off
	for s.off < len(s.text) && !strings.ContainsRune(" \t\r\f\v\n;{}\"`", rune(s.text[s.off])) {
		s.off++
	}
	startsStmt := !s.inStmt
	s.token(tokWord, start, s.off)
	if startsStmt && !s.skip && s.text[start:s.off] == "match" {
		s.expr()
	}
}

// token emits a word or string, or reports it when a string stands where a
// directive name belongs.
func (s *scanner) token(typ lexer.TokenType, start, end int) {
	if s.skip {
		return
	}
	if !s.inStmt && typ != tokWord {
		if s.mute == 0 {
			s.errorf(start, "expected a directive name, got string %s", s.text[start:end])
		}
		s.skip = true
		return
	}
	s.emit(typ, start, end)
	s.inStmt = true
}

// stringEnd returns the offset after the string starting at start and
// whether it was closed. A "..." string ends at the end of its line, and so
// does a `...` one when oneLine is set.
func stringEnd(text string, start int, oneLine bool) (int, bool) {
	q := text[start]
	for i := start + 1; i < len(text); i++ {
		switch c := text[i]; {
		case c == q:
			return i + 1, true
		case q == '"' && c == '\\':
			i++
		case c == '\n' && (q == '"' || oneLine):
			return i, false
		}
	}
	return len(text), false
}

// unquote returns the value of a quoted token (Go escapes inside "...",
// none inside `...`) and the offset of an invalid escape in raw, or -1.
func unquote(raw string) (string, int) {
	if len(raw) < 2 || raw[len(raw)-1] != raw[0] {
		raw += raw[:1] // unterminated: already reported
	}
	body := raw[1 : len(raw)-1]
	if raw[0] == '`' || !strings.Contains(body, `\`) {
		return body, -1
	}
	var b strings.Builder
	for rest := body; rest != ""; {
		r, mb, tail, err := strconv.UnquoteChar(rest, '"')
		if err != nil {
			return body, 1 + len(body) - len(rest)
		}
		if r < utf8.RuneSelf || !mb {
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(r)
		}
		rest = tail
	}
	return b.String(), -1
}

func lineEnd(text string, off int) int {
	if i := strings.IndexByte(text[off:], '\n'); i >= 0 {
		return off + i
	}
	return len(text)
}
