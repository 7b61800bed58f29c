package rule

// STUB: signatures fixed for the other packages; the rule helper replaces
// this file with the real implementation (keep the exported API).

import "errors"

// Kind says which matcher vocabulary a rule uses.
type Kind int

// The two vocabularies.
const (
	HTTP Kind = iota // Host, HostRegexp, Path, PathPrefix, PathRegexp, Method, Header, HeaderRegexp, Query, QueryRegexp, ClientIP
	TCP              // HostSNI, HostSNIRegexp, ALPN, ClientIP
)

// Error is a problem in a rule's text. Offset is the byte offset within the
// rule text where it was found, so callers can turn it into file:line:col.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Rule is a parsed, compiled rule expression.
type Rule struct{ text string }

// Parse parses and compiles text as a rule of the given kind. A non-nil
// error is always an *Error.
func Parse(kind Kind, text string) (*Rule, error) {
	return nil, &Error{Msg: "rule: not implemented"}
}

// Text returns the rule as written.
func (r *Rule) Text() string { return r.text }

// DefaultPriority is the priority used when none is written: len(text) in
// bytes, or -1 for a TCP rule that is only HostSNI(`*`) (§7).
func (r *Rule) DefaultPriority() int { return len(r.text) }

// Warnings lists parts of the rule that are accepted but can never match
// (a Host value with a port, ...), each with its offset.
func (r *Rule) Warnings() []*Error { return nil }

// Entry is one route handed to a table: its rule and effective priority.
// Tables keep entries' order as the tie-break (first defined wins).
type Entry struct {
	Rule     *Rule
	Priority int
}

// HTTPTable picks the highest-priority matching HTTP route.
type HTTPTable struct{}

// NewHTTPTable builds the index for entries (all of Kind HTTP).
func NewHTTPTable(entries []Entry) (*HTTPTable, error) { return nil, errors.New("not implemented") }

// Match returns the index in entries of the route that serves req, or -1.
func (t *HTTPTable) Match(req *HTTPRequest) int { return -1 }

// TCPTable picks the highest-priority matching TCP route.
type TCPTable struct{}

// NewTCPTable builds the index for entries (all of Kind TCP).
func NewTCPTable(entries []Entry) (*TCPTable, error) { return nil, errors.New("not implemented") }

// Match returns the index in entries of the route that serves h, or -1.
func (t *TCPTable) Match(h *TCPHello) int { return -1 }

// CanonicalHost turns a request authority into the host that Host and
// HostRegexp read (§3.2).
func CanonicalHost(authority string) string { return authority }

// NormalizePath applies entry-point normalisation (§3.1 steps 1-3) to an
// escaped request path and returns the sanitised escaped path (forwarded
// upstream) and the routing path (§3.3). ok is false when the request must
// be answered 400 (a '#', a bad '%' escape).
func NormalizePath(escaped string) (clean, routing string, ok bool) {
	return escaped, escaped, true
}

// RoutingPath computes the routing path (§3.3) of an escaped path without
// sanitising it (for listeners with normalisation off).
func RoutingPath(escaped string) string { return escaped }

// NormalizeQuery applies §3.1 step 4 (';' becomes '&') to a raw query.
func NormalizeQuery(raw string) string { return raw }
