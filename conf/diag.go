package conf

import (
	"strings"

	"github.com/edgeway/edgeway/routes"
)

// String formats the diagnostic as "file:line:col: msg", then the source
// line and a caret under the column (just "file: msg" without a line).
func (d Diagnostic) String() string {
	return routes.Format(d.Pos.File, d.Pos.Line, d.Pos.Col, d.Msg, d.Source)
}

// String returns file:line:col.
func (p Pos) String() string { return routes.Pos{File: p.File, Line: p.Line, Col: p.Col}.String() }

// ErrorList is every error Load found, in file order (main file first,
// then the included files as they were loaded) and line order within a file.
type ErrorList []Diagnostic

// Error prints every diagnostic, one after another.
func (l *ErrorList) Error() string {
	parts := make([]string, len(*l))
	for i, d := range *l {
		parts[i] = d.String()
	}
	return strings.Join(parts, "\n")
}

// Unwrap returns the underlying errors (a file that could not be read), so
// that errors.Is(err, fs.ErrNotExist) works on Load's result.
func (l *ErrorList) Unwrap() []error {
	var errs []error
	for _, d := range *l {
		if d.Err != nil {
			errs = append(errs, d.Err)
		}
	}
	return errs
}

// Diagnostics returns the diagnostics in the list.
func (l *ErrorList) Diagnostics() []Diagnostic { return *l }
