package routes

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Pos is a position in a source file. Offset counts bytes from 0; Line and
// Col count from 1, Col in bytes.
type Pos struct {
	File   string
	Offset int
	Line   int
	Col    int
}

// String returns file:line:col.
func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Source is the text of one file with an index of its line starts, so that
// byte offsets (from tokens or from rule errors) map back to line and column.
type Source struct {
	Name  string
	Text  string
	lines []int32 // offset of the first byte of each line (Parse refuses files over 2 GiB)
}

// NewSource indexes text under the given file name.
func NewSource(name string, text []byte) *Source {
	s := &Source{Name: name, Text: string(text)}
	s.lines = make([]int32, 1, 1+bytes.Count(text, []byte{'\n'}))
	for off := 0; ; {
		i := strings.IndexByte(s.Text[off:], '\n')
		if i < 0 {
			return s
		}
		off += i + 1
		s.lines = append(s.lines, int32(off))
	}
}

// Pos returns the position of byte offset off, clamped to the text.
func (s *Source) Pos(off int) Pos {
	off = max(0, min(off, len(s.Text)))
	line := sort.Search(len(s.lines), func(i int) bool { return int(s.lines[i]) > off })
	return Pos{File: s.Name, Offset: off, Line: line, Col: off - int(s.lines[line-1]) + 1}
}

// Line returns the text of line n (from 1) without its line ending, or ""
// when n is out of range.
func (s *Source) Line(n int) string {
	if n < 1 || n > len(s.lines) {
		return ""
	}
	end := len(s.Text)
	if n < len(s.lines) {
		end = int(s.lines[n]) - 1
	}
	return strings.TrimSuffix(s.Text[s.lines[n-1]:end], "\r")
}

// Error is a problem at a position in a file. Source is the text of the
// line it points into, for the caret display.
type Error struct {
	Pos    Pos
	Msg    string
	Source string
}

// Error formats the problem as file:line:col: msg, then the source line and
// a caret under the column.
func (e *Error) Error() string {
	return Format(e.Pos.File, e.Pos.Line, e.Pos.Col, e.Msg, e.Source)
}

// ErrorList is every problem found in one or more files, in source order.
type ErrorList []*Error

// Error prints each error in turn.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Format renders a diagnostic: "file:line:col: msg", then, when source is
// known, the source line and a caret under column col (tabs are kept so the
// caret lines up however the terminal expands them). A line of 0 prints only
// "file: msg".
func Format(file string, line, col int, msg, source string) string {
	if line < 1 {
		if file == "" {
			return msg
		}
		return file + ": " + msg
	}
	head := fmt.Sprintf("%s:%d:%d: %s", file, line, col, msg)
	if source == "" && col <= 1 {
		return head
	}
	var pad strings.Builder
	for i := 0; i < col-1; i++ {
		if i >= len(source) {
			pad.WriteByte(' ')
		} else if source[i] == '\t' {
			pad.WriteByte('\t')
		} else if source[i] < 0x80 || source[i] >= 0xC0 { // one space per rune
			pad.WriteByte(' ')
		}
	}
	return head + "\n    " + source + "\n    " + pad.String() + "^"
}

// errorAt builds an Error at byte offset off of s.
func (s *Source) errorAt(off int, format string, args ...any) *Error {
	p := s.Pos(off)
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...), Source: s.Line(p.Line)}
}

// lineCursor maps offsets to positions like Source.Pos, walking from the
// line of the last offset asked: a scanner asks in nearly increasing order,
// so each answer costs a step or two instead of a binary search.
type lineCursor struct {
	src  *Source
	line int // index in src.lines of the line of the last offset
}

func (c *lineCursor) pos(off int) Pos {
	s := c.src
	off = max(0, min(off, len(s.Text)))
	for c.line+1 < len(s.lines) && int(s.lines[c.line+1]) <= off {
		c.line++
	}
	for c.line > 0 && int(s.lines[c.line]) > off {
		c.line--
	}
	return Pos{File: s.Name, Offset: off, Line: c.line + 1, Col: off - int(s.lines[c.line]) + 1}
}
