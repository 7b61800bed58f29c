package routes

import "strings"

// expr scans the rule expression after a `match` that starts a statement and
// emits it as one Expr token holding its exact text. The expression goes on
// over newlines while a parenthesis is open, after a trailing operator
// (&&, ||, !, "(" or ","), and before a line that starts with && or ||.
// It ends at ';', '{', '}' or '#' outside a string, at any other newline,
// and, so that a block can sit on one line, at a word after a complete
// top-level call (`match Host(`a`) to api`), which also ends the statement.
func (s *scanner) expr() {
	i := skipBlanks(s.text, s.off)
	start, end := i, i
	depth, last := 0, byte(0)
	for i < len(s.text) {
		if j := skipInExpr(s.text, i); j > i {
			i = j
			continue
		}
		c := s.text[i]
		if stop, split := exprStops(s.text, i, depth, last); stop {
			s.endExpr(start, end, i, split)
			return
		}
		switch c {
		case '"', '`':
			j, ok := stringEnd(s.text, i, true) // rule values hold no newline
			if !ok {
				s.errorf(i, "unterminated string in match expression")
			}
			i, end, last = j, j, c
			continue
		case '\n':
			i++
			continue
		case '(':
			depth++
		case ')':
			depth = max(0, depth-1)
		}
		last = c
		i++
		end = i
	}
	s.endExpr(start, end, i, false)
}

// skipInExpr returns the offset after the blanks or Go comment at i, or i.
func skipInExpr(text string, i int) int {
	switch {
	case strings.IndexByte(" \t\r\f\v", text[i]) >= 0:
		return i + 1
	case strings.HasPrefix(text[i:], "//"):
		return lineEnd(text, i)
	case strings.HasPrefix(text[i:], "/*"):
		return commentEnd(text, i)
	}
	return i
}

// exprStops reports whether the expression ends before offset i, given the
// open parentheses and the last significant byte, and whether a directive
// follows on the same line.
func exprStops(text string, i, depth int, last byte) (stop, split bool) {
	switch c := text[i]; {
	case c == ';' || c == '{' || c == '}' || c == '#':
		return true, false
	case c == '\n':
		continues := depth > 0 || (last != 0 && strings.IndexByte("&|!(,", last) >= 0) || nextLineContinues(text, i+1)
		return !continues, false
	case depth == 0 && last == ')' && isIdentStart(c) && !callFollows(text, i):
		return true, true
	}
	return false, false
}

// endExpr emits the expression text[start:end] and resumes scanning at
// next; split marks a following directive on the same line.
func (s *scanner) endExpr(start, end, next int, split bool) {
	if end > start {
		s.token(tokExpr, start, end)
	}
	if split {
		s.sep(end, end)
	}
	s.off = next
}

func skipBlanks(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r') {
		i++
	}
	return i
}

// nextLineContinues reports whether the next non-blank text starts with a
// binary operator, continuing the expression of the line before.
func nextLineContinues(text string, i int) bool {
	for i < len(text) && strings.IndexByte(" \t\r\n\f\v", text[i]) >= 0 {
		i++
	}
	rest := text[i:]
	return strings.HasPrefix(rest, "&&") || strings.HasPrefix(rest, "||")
}

func commentEnd(text string, i int) int {
	if j := strings.Index(text[i+2:], "*/"); j >= 0 {
		return i + 2 + j + 2
	}
	return len(text)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func isIdentByte(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9')
}

// callFollows reports whether the identifier at i is followed by "(", i.e.
// it is a matcher call (a missing operator the rule parser will report)
// rather than the next directive.
func callFollows(text string, i int) bool {
	for i < len(text) && isIdentByte(text[i]) {
		i++
	}
	i = skipBlanks(text, i)
	return i < len(text) && text[i] == '('
}
