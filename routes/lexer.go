package routes

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Token types of the configuration language. Comments are dropped by the
// scanner; newlines and ';' both become Sep.
type tokType uint8

const (
	tokEOF tokType = iota
	tokWord
	tokString
	tokExpr // the text of a match expression, exactly as written
	tokSep
	tokLBrace
	tokRBrace
)

// token is one token: the offsets of its first byte and of the byte after
// it (a large file has hundreds of thousands of tokens, so they stay
// small; the parser turns offsets into positions). The scanner is
// hand-written because the end of a match expression depends on its
// parentheses and operators, which a regexp lexer cannot follow.
type token struct {
	typ        tokType
	start, end int32
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
	toks   []token
	errs   ErrorList
	open   []brace // the open braces
	mute   int     // number of dropped braces on the stack
	inStmt bool    // a statement has started since the last Sep or brace
	skip   bool    // drop tokens until the next Sep (after a bad statement start)
}

func scan(src *Source) ([]token, ErrorList) {
	s := &scanner{src: src, text: src.Text}
	s.toks = make([]token, 0, len(src.Text)/5+1) // about one token per 5 bytes of a route file
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

func (s *scanner) emit(typ tokType, start, end int) {
	if s.mute > 0 {
		return
	}
	s.toks = append(s.toks, token{typ: typ, start: int32(start), end: int32(end)})
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
	for n > 0 && s.toks[n-1].typ == tokSep && s.toks[n-1].end > s.toks[n-1].start && s.text[s.toks[n-1].start] == '\n' {
		n--
	}
	if n == len(s.toks) || n == 0 {
		return false
	}
	switch s.toks[n-1].typ {
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
		// A brace is dropped only where no statement has started, and the
		// words muted inside it must not start one: what follows it is
		// where a directive name belongs (a string there is reported, not
		// passed to the grammar as one).
		s.mute--
		if s.mute == 0 {
			s.inStmt = false
		}
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
	s.toks = append(s.toks, token{typ: tokEOF, start: int32(end), end: int32(end)})
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

// wordEnds marks the bytes that end a word.
var wordEnds = [256]bool{' ': true, '\t': true, '\r': true, '\f': true, '\v': true, '\n': true, ';': true, '{': true, '}': true, '"': true, '`': true}

func (s *scanner) word() {
	start := s.off
	for s.off < len(s.text) && !wordEnds[s.text[s.off]] {
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
func (s *scanner) token(typ tokType, start, end int) {
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
