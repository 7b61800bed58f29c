package rule

import (
	"errors"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/scanner"
	"go/token"
	"strconv"
	"strings"
)

// nodeOp is the kind of a node of a parsed rule.
type nodeOp uint8

const (
	opLeaf nodeOp = iota // a matcher call, possibly negated
	opAnd
	opOr
)

// node is a rule in negation normal form: '!' only ever sits on leaves.
type node struct {
	op          nodeOp
	left, right *node // opAnd, opOr
	leaf        *leaf // opLeaf
}

// leaf is one matcher call with its compiled function.
type leaf struct {
	spec *spec
	args []string
	offs []int // offsets of the argument literals
	not  bool
	http httpFn
	tcp  tcpFn
}

// parser turns rule text into a node tree, the way Traefik does: Go's own
// expression parser, then a walk that accepts only the rule subset (§1).
type parser struct {
	kind     Kind
	text     string
	cache    *Cache // nil: compile every regexp
	fset     *token.FileSet
	warnings []*Error
}

func (p *parser) parse() (*node, *Error) {
	if strings.TrimSpace(p.text) == "" {
		return nil, &Error{Offset: 0, Msg: "empty rule: expected a matcher call such as Host(`example.com`)"}
	}
	p.fset = token.NewFileSet()
	expr, err := goparser.ParseExprFrom(p.fset, "", joinLines(p.text), goparser.SkipObjectResolution)
	if err != nil {
		return nil, p.syntaxError(err)
	}
	return p.walk(expr, false)
}

func (p *parser) syntaxError(err error) *Error {
	var list scanner.ErrorList
	if !errors.As(err, &list) || len(list) == 0 {
		return &Error{Offset: 0, Msg: "syntax error: " + err.Error()}
	}
	msg := "syntax error: " + list[0].Msg
	if found, ok := strings.CutPrefix(list[0].Msg, "expected 'EOF', found "); ok {
		msg = "syntax error: unexpected " + found + " after a complete expression (missing && or ||?)"
	}
	if strings.Contains(list[0].Msg, "escape sequence") {
		msg += " (in \"...\" a backslash starts a Go escape; write regexps in `...`)"
	}
	return &Error{Offset: p.clamp(list[0].Pos.Offset), Msg: msg}
}

func (p *parser) clamp(off int) int {
	return max(0, min(off, len(p.text)))
}

// offset maps a position of the parsed expression to a byte offset in text.
func (p *parser) offset(pos token.Pos) int {
	if !pos.IsValid() {
		return 0
	}
	return p.clamp(p.fset.Position(pos).Offset)
}

func (p *parser) errAt(pos token.Pos, format string, a ...any) *Error {
	return &Error{Offset: p.offset(pos), Msg: fmt.Sprintf(format, a...)}
}

// source returns the rule text of e, shortened for messages.
func (p *parser) source(e ast.Node) string {
	s := p.text[p.offset(e.Pos()):max(p.offset(e.Pos()), p.offset(e.End()))]
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return s
}

// walk converts e, negated when neg is set, pushing '!' down to the leaves
// with De Morgan's laws (§1.5).
func (p *parser) walk(e ast.Expr, neg bool) (*node, *Error) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return p.walk(e.X, neg)
	case *ast.UnaryExpr:
		if e.Op != token.NOT {
			return nil, p.errAt(e.OpPos, "unsupported operator %s; expected &&, || or !", e.Op)
		}
		return p.walk(e.X, !neg)
	case *ast.BinaryExpr:
		return p.binary(e, neg)
	case *ast.CallExpr:
		return p.call(e, neg)
	case *ast.Ident:
		return nil, p.errAt(e.Pos(), "expected a matcher call, found identifier %s (a matcher needs its arguments, e.g. Host(`example.com`))", e.Name)
	case *ast.BasicLit:
		return nil, p.errAt(e.Pos(), "expected a matcher call, found literal %s (a value must be a matcher's argument)", p.source(e))
	}
	return nil, p.errAt(e.Pos(), "unsupported expression %s; expected a matcher call combined with &&, || and !", p.source(e))
}

func (p *parser) binary(e *ast.BinaryExpr, neg bool) (*node, *Error) {
	var op nodeOp
	switch e.Op {
	case token.LAND:
		op = opAnd
	case token.LOR:
		op = opOr
	default:
		return nil, p.errAt(e.OpPos, "unsupported operator %s; expected && or ||", e.Op)
	}
	if neg { // De Morgan: !(A && B) = !A || !B, !(A || B) = !A && !B
		op = opAnd + opOr - op
	}
	l, err := p.walk(e.X, neg)
	if err != nil {
		return nil, err
	}
	r, err := p.walk(e.Y, neg)
	if err != nil {
		return nil, err
	}
	return &node{op: op, left: l, right: r}, nil
}

func (p *parser) call(c *ast.CallExpr, neg bool) (*node, *Error) {
	id, ok := c.Fun.(*ast.Ident)
	if !ok {
		return nil, p.errAt(c.Fun.Pos(), "expected a matcher name before '(', found %s", p.source(c.Fun))
	}
	s, why := lookupSpec(p.kind, id.Name)
	if s == nil {
		return nil, p.errAt(id.Pos(), "%s", why)
	}
	if c.Ellipsis.IsValid() {
		return nil, p.errAt(c.Ellipsis, "unsupported '...' in %s arguments", s.name)
	}
	if len(c.Args) == 0 {
		return nil, p.errAt(c.Rparen, "%s takes %s, got none", s.name, s.arity())
	}
	args := make([]arg, len(c.Args))
	for i, a := range c.Args {
		v, err := p.argument(s, i, a)
		if err != nil {
			return nil, err
		}
		args[i] = arg{val: v, off: p.offset(a.Pos())}
	}
	if len(args) < s.min {
		return nil, p.errAt(c.Rparen, "%s takes %s, got %d", s.name, s.arity(), len(args))
	}
	if len(args) > s.max {
		return nil, &Error{Offset: args[s.max].off, Msg: fmt.Sprintf("%s takes %s, got %d", s.name, s.arity(), len(args))}
	}
	return p.build(s, args, neg)
}

// argument checks that a is a non-empty string literal and unquotes it.
func (p *parser) argument(s *spec, i int, a ast.Expr) (string, *Error) {
	lit, ok := a.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		hint := ""
		switch {
		case ok && lit.Kind == token.CHAR:
			hint = " (single quotes make a Go rune; use `...` or \"...\")"
		case isName(a):
			hint = " (quote it: `" + p.source(a) + "`)"
		}
		return "", p.errAt(a.Pos(), "%s argument %d must be a string literal in `...` or \"...\", found %s%s",
			s.name, i+1, p.source(a), hint)
	}
	v, err := strconv.Unquote(lit.Value)
	if err != nil { // unreachable: the Go scanner has checked the literal
		return "", p.errAt(a.Pos(), "%s argument %d: invalid string literal: %v", s.name, i+1, err)
	}
	if v == "" {
		return "", p.errAt(a.Pos(), "%s argument %d is empty", s.name, i+1)
	}
	return v, nil
}

func isName(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return true
	case *ast.SelectorExpr:
		return isName(e.X)
	}
	return false
}

func (p *parser) build(s *spec, args []arg, neg bool) (*node, *Error) {
	l := &leaf{spec: s, not: neg, args: make([]string, len(args)), offs: make([]int, len(args))}
	for i, a := range args {
		l.args[i], l.offs[i] = a.val, a.off
	}
	var err *Error
	if s.http != nil {
		l.http, err = s.http(p, args)
	} else {
		l.tcp, err = s.tcp(p, args)
	}
	if err != nil {
		return nil, err
	}
	return &node{op: opLeaf, leaf: l}, nil
}

func (p *parser) warn(a arg, format string, v ...any) {
	p.warnings = append(p.warnings, &Error{Offset: a.off, Msg: fmt.Sprintf(format, v...)})
}
