package rule

import "fmt"

// Kind says which matcher vocabulary a rule uses.
type Kind int

// The two vocabularies.
const (
	HTTP Kind = iota // Host, HostRegexp, Path, PathPrefix, PathRegexp, Method, Header, HeaderRegexp, Query, QueryRegexp, ClientIP, ClientCertSubject, ClientCertSAN, ClientCertFingerprint, JWTClaim
	TCP              // HostSNI, HostSNIRegexp, ALPN, ClientIP
)

// String returns "HTTP" or "TCP".
func (k Kind) String() string {
	switch k {
	case HTTP:
		return "HTTP"
	case TCP:
		return "TCP"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a problem in a rule's text. Offset is the byte offset within the
// rule text where it was found (0 <= Offset <= len(text)), so callers can
// turn it into file:line:col. Msg says what was expected there.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return e.Msg }

// Rule is a parsed, compiled rule expression. It is immutable and safe for
// concurrent use.
type Rule struct {
	text     string
	kind     Kind
	tree     *node
	http     httpFn
	tcp      tcpFn
	warnings []*Error
	shape    shape
}

// Parse parses and compiles text as a rule of the given kind. A non-nil
// error is always an *Error.
func Parse(kind Kind, text string) (*Rule, error) {
	return parse(kind, text, nil)
}

func parse(kind Kind, text string, cache *Cache) (*Rule, error) {
	if kind != HTTP && kind != TCP {
		return nil, &Error{Msg: fmt.Sprintf("unknown rule kind %d", int(kind))}
	}
	p := parser{kind: kind, text: text, cache: cache}
	tree, err := p.parse()
	if err != nil {
		return nil, err
	}
	r := &Rule{text: text, kind: kind, tree: tree, warnings: p.warnings, shape: analyse(tree)}
	if kind == HTTP {
		r.http = compileHTTP(tree)
	} else {
		r.tcp = compileTCP(tree)
	}
	return r, nil
}

// Text returns the rule as written.
func (r *Rule) Text() string { return r.text }

// Kind returns the vocabulary the rule was parsed with.
func (r *Rule) Kind() Kind { return r.kind }

// DefaultPriority is the priority used when none is written: len(text) in
// bytes, or -1 for a TCP rule that is only HostSNI(`*`) (§7).
func (r *Rule) DefaultPriority() int {
	if r.kind == TCP && r.tree.op == opLeaf && r.tree.leaf.spec.name == "HostSNI" &&
		r.tree.leaf.args[0] == "*" {
		return -1 // §7.2: negation is ignored on purpose, as Traefik does
	}
	return len(r.text)
}

// Warnings lists parts of the rule that are accepted but can never match
// (a Host value with a port or IPv6 brackets, Host(`*foo.com`)), each with
// the offset of the offending argument.
func (r *Rule) Warnings() []*Error { return r.warnings }

// MatchHTTP reports whether the rule, of Kind HTTP, matches req. It is the
// plain evaluation a table runs for each candidate; false for a TCP rule.
func (r *Rule) MatchHTTP(req *HTTPRequest) bool { return r.http != nil && r.http(req) }

// MatchTCP reports whether the rule, of Kind TCP, matches h; false for an
// HTTP rule.
func (r *Rule) MatchTCP(h *TCPHello) bool { return r.tcp != nil && r.tcp(h) }

// Entry is one route handed to a table: its rule and effective priority.
// Tables keep entries' order as the tie-break (first defined wins).
type Entry struct {
	Rule     *Rule
	Priority int
}
