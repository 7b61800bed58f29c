package rule

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// matchRE is an unanchored Go RE2 regexp with a literal prefilter: most
// routing regexps contain a fixed string (`\.example\.com`) that any match
// must contain, and strings.Contains rejects a request far faster than the
// regexp engine does.
type matchRE struct {
	re  *regexp.Regexp
	lit string // substring every match contains; "" when none is known
}

// compileRE compiles the regexp argument a of matcher name, through the
// parser's cache when it has one.
func (p *parser) compileRE(name string, a arg) (*matchRE, *Error) {
	if p.cache != nil {
		return p.cache.regexp(name, a)
	}
	return newMatchRE(name, a)
}

func newMatchRE(name string, a arg) (*matchRE, *Error) {
	re, err := regexp.Compile(a.val)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, &Error{Offset: a.off, Msg: name + ": invalid regexp: " + msg}
	}
	return &matchRE{re: re, lit: requiredLiteral(a.val)}, nil
}

func (m *matchRE) match(s string) bool {
	if m.lit != "" && !strings.Contains(s, m.lit) {
		return false
	}
	return m.re.MatchString(s)
}

// requiredLiteral returns the longest literal string that every match of
// expr must contain, or "".
func requiredLiteral(expr string) string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return ""
	}
	return required(re.Simplify())
}

func required(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return ""
		}
		for _, r := range re.Rune {
			// U+FFFD also matches invalid UTF-8 bytes: no literal then.
			if r == utf8.RuneError {
				return ""
			}
		}
		return string(re.Rune)
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if s := required(sub); len(s) > len(best) {
				best = s
			}
		}
		return best
	}
	return ""
}
