package rule

import "strings"

// joinLines turns the newlines of text that lie between tokens (and the line
// comments they end) into spaces, keeping every byte offset. Go's scanner
// inserts a ';' at a newline after ')' or an identifier, so the Go parser
// alone would reject a rule continued on a new line by && or ||; the rule
// language allows newlines anywhere between tokens (§1). Newlines inside
// raw strings are kept (they are part of the value), and so is a newline
// inside "..." or '...', where the scanner must still report it.
func joinLines(text string) string {
	if strings.IndexByte(text, '\n') < 0 {
		return text
	}
	b := []byte(text)
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == '\n':
			b[i] = ' '
		case b[i] == '`':
			i = skipRaw(b, i)
		case b[i] == '"' || b[i] == '\'':
			i = skipQuoted(b, i)
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			i = blankLineComment(b, i)
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			i = joinBlockComment(b, i)
		}
	}
	return string(b)
}

// skipRaw returns the index of the backquote closing the raw string at i.
func skipRaw(b []byte, i int) int {
	if j := strings.IndexByte(string(b[i+1:]), '`'); j >= 0 {
		return i + 1 + j
	}
	return len(b)
}

// skipQuoted returns the index of the quote closing the literal at i, or of
// the newline that ends it unterminated.
func skipQuoted(b []byte, i int) int {
	q := b[i]
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case q:
			return i
		case '\n':
			return i
		}
	}
	return len(b)
}

// blankLineComment replaces the comment at i and the newline ending it
// with spaces and returns the index of that newline.
func blankLineComment(b []byte, i int) int {
	for ; i < len(b) && b[i] != '\n'; i++ {
		b[i] = ' '
	}
	if i < len(b) {
		b[i] = ' '
	}
	return i
}

// joinBlockComment replaces the newlines of the comment at i with spaces
// and returns the index of its closing '/'.
func joinBlockComment(b []byte, i int) int {
	for i += 2; i < len(b); i++ {
		if b[i] == '\n' {
			b[i] = ' '
		}
		if b[i] == '*' && i+1 < len(b) && b[i+1] == '/' {
			return i + 1
		}
	}
	return len(b)
}
