package router

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// chain is a route's middlewares, compiled at load time into plain data so
// that a request only runs loops over small slices.
//
// Order: path operations run in the order written, as do request header
// operations (after the forwarding headers are set, so remove_header can
// drop X-Forwarded-For). Response header operations apply to every
// response of the route: proxied ones and respond/redirect answers. The
// first respond or redirect ends the chain; middlewares written after it
// cannot take effect and are ignored. redirect_https is the exception: it
// runs before all of them, wherever it was written. A request that did not
// arrive over TLS is redirected (with the response header operations
// applied); one that did goes on as if it were not there.
type chain struct {
	path       []pathOp
	reqHeader  []headerOp
	respHeader []headerOp
	answer     *answer
	https      *httpsRedirect
}

// pathOp is strip_prefix or add_prefix, applied to the escaped path that is
// forwarded upstream; the prefix is compared and added as written.
type pathOp struct {
	strip  bool
	prefix string
}

// headerOp sets (values non-nil) or removes one header.
type headerOp struct {
	name   string
	values []string // shared, cap-limited so an append copies
}

func compileChain(mws []conf.Middleware) (chain, error) {
	var c chain
	for _, m := range mws {
		if c.answer != nil && m.Kind != conf.RedirectHTTPS {
			continue
		}
		if err := c.add(m); err != nil {
			return chain{}, fmt.Errorf("%s: %w", m.Kind, err)
		}
	}
	return c, nil
}

func (c *chain) add(m conf.Middleware) error {
	name := textproto.CanonicalMIMEHeaderKey(m.Name)
	switch m.Kind {
	case conf.StripPrefix:
		c.path = append(c.path, pathOp{strip: true, prefix: m.Arg})
	case conf.AddPrefix:
		c.path = append(c.path, pathOp{prefix: "/" + strings.Trim(m.Arg, "/")})
	case conf.SetRequestHeader:
		c.reqHeader = append(c.reqHeader, headerOp{name: name, values: []string{m.Arg}[:1:1]})
	case conf.RemoveRequestHeader:
		c.reqHeader = append(c.reqHeader, headerOp{name: name})
	case conf.SetResponseHeader:
		c.respHeader = append(c.respHeader, headerOp{name: name, values: []string{m.Arg}[:1:1]})
	case conf.RemoveResponseHeader:
		c.respHeader = append(c.respHeader, headerOp{name: name})
	case conf.Respond:
		c.answer = newRespond(m.Code, m.Arg)
	case conf.Redirect:
		a, err := newRedirect(m.Code, m.Arg)
		if err != nil {
			return err
		}
		c.answer = a
	case conf.RedirectHTTPS:
		h, err := newHTTPSRedirect(m.Code, m.Arg)
		if err != nil {
			return err
		}
		c.https = h
	default:
		return fmt.Errorf("unknown middleware")
	}
	return nil
}

// rewritePath applies the path operations to an escaped path. It allocates
// only when a prefix is added or a leading slash must be restored.
func (c *chain) rewritePath(p string) string {
	for _, op := range c.path {
		switch {
		case !op.strip:
			if op.prefix != "/" {
				p = op.prefix + p
			}
		case op.prefix != "" && strings.HasPrefix(p, op.prefix):
			p = p[len(op.prefix):]
			if p == "" || p[0] != '/' {
				p = "/" + p
			}
			p = dropLeadingDotSegments(p)
		}
	}
	return p
}

// dropLeadingDotSegments removes the "." and ".." segments a strip can
// bring to the front of a path ("/pub../x" less "/pub" is "/../x"), which
// would otherwise climb out of a prefix added next or resolved upstream.
// An encoded slash or a backslash after the dots counts as a separator here,
// since many upstreams decode it before resolving dot-segments. The rest of
// the path was sanitised before matching.
func dropLeadingDotSegments(p string) string {
	for {
		rest := p[1:]
		n := 0
		switch {
		case strings.HasPrefix(rest, ".."):
			n = 2
		case strings.HasPrefix(rest, "."):
			n = 1
		default:
			return p
		}
		after := rest[n:]
		switch {
		case after == "":
			return "/"
		case after[0] == '/':
			p = after
		case after[0] == '\\':
			p = "/" + after[1:]
		case len(after) >= 3 && (strings.EqualFold(after[:3], "%2F") || strings.EqualFold(after[:3], "%5C")):
			p = "/" + after[3:]
		default:
			return p // a segment such as "/.well-known"
		}
	}
}

// applyHeaders runs the set and remove operations on h, comparing names
// without regard to case.
func applyHeaders(h httpmsg.Header, ops []headerOp) httpmsg.Header {
	for _, op := range ops {
		if op.values == nil {
			h = h.Del(op.name)
		} else {
			h = h.Set(op.name, op.values[0])
		}
	}
	return h
}

// answer is a respond or redirect: the route answers without an upstream.
type answer struct {
	code   int
	body   []byte // respond
	target []part // redirect; nil for respond
	query  bool   // target uses $query
}

// part is a literal piece of a redirect target or a variable.
type part struct {
	lit string // a literal; for $query, the separator written before a non-empty query
	v   byte   // 0: literal, 'p': $path, 'q': $query
}

func newRespond(code int, body string) *answer {
	if code == 0 {
		code = http.StatusOK
	}
	return &answer{code: code, body: []byte(body)}
}

// newRedirect compiles a redirect target. $path is the request path (as
// received, after normalisation, before strip/add prefix) and $query the raw
// query without '?'. When the target does not use $query and the request has
// a query, "?query" is appended ("&query" when the target already has a '?'),
// so a redirect never loses the query by accident.
func newRedirect(code int, target string) (*answer, error) {
	if code == 0 {
		code = http.StatusFound
	}
	if code < 300 || code > 399 {
		return nil, fmt.Errorf("status %d is not a redirect", code)
	}
	a := &answer{code: code}
	for target != "" {
		i := strings.IndexByte(target, '$')
		switch {
		case i < 0:
			a.target = append(a.target, part{lit: target})
			target = ""
		case strings.HasPrefix(target[i:], "$path"):
			a.target = append(a.target, part{lit: target[:i]}, part{v: 'p'})
			target = target[i+len("$path"):]
		case strings.HasPrefix(target[i:], "$query"):
			// A '?' or '&' just before $query is written only with a
			// query: an empty one leaves no dangling separator.
			lit, sep := target[:i], ""
			if strings.HasSuffix(lit, "?") || strings.HasSuffix(lit, "&") {
				lit, sep = lit[:len(lit)-1], lit[len(lit)-1:]
			}
			a.target = append(a.target, part{lit: lit}, part{v: 'q', lit: sep})
			a.query = true
			target = target[i+len("$query"):]
		default:
			a.target = append(a.target, part{lit: target[:i+1]})
			target = target[i+1:]
		}
	}
	return a, nil
}

// location expands a redirect target into buf. An empty $query takes its
// separator with it: "?$query" and "&$query" leave nothing, and in
// "?$query&v=2" the parameters after it keep the '?'.
func (a *answer) location(buf []byte, path, query string) []byte {
	qmark := false
	for i := 0; i < len(a.target); i++ {
		switch p := a.target[i]; p.v {
		case 'p':
			buf = append(buf, path...)
		case 'q':
			if query != "" {
				buf = append(buf, p.lit...)
				buf = append(buf, query...)
			} else if next := i + 1; p.lit != "" && next < len(a.target) && a.target[next].v == 0 &&
				strings.HasPrefix(a.target[next].lit, "&") {
				buf = append(buf, p.lit...)
				buf = append(buf, a.target[next].lit[1:]...)
				i++
			}
		default:
			buf = append(buf, p.lit...)
			qmark = qmark || strings.IndexByte(p.lit, '?') >= 0
		}
	}
	if !a.query && query != "" {
		if qmark {
			buf = append(buf, '&')
		} else {
			buf = append(buf, '?')
		}
		buf = append(buf, query...)
	}
	return buf
}
