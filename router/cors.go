package router

import (
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// corsPolicy is a route's `cors` block, compiled at load time: the origin
// check is one map lookup, and every header value is built here once.
// The edge owns CORS on such a route: the upstream's Access-Control-*
// response fields are dropped, so that a browser never sees two answers.
type corsPolicy struct {
	origins     map[string]string // allowed origin -> the value to send (the same string, held here)
	any         bool              // `origins *`
	methods     []string
	methodList  string // Access-Control-Allow-Methods
	headers     map[string]bool
	headerList  string // Access-Control-Allow-Headers
	expose      string // Access-Control-Expose-Headers
	credentials bool
	maxAge      string // Access-Control-Max-Age; "" none
}

func compileCORS(c *conf.CORS) *corsPolicy {
	if c == nil {
		return nil
	}
	p := &corsPolicy{origins: map[string]string{}, any: c.AnyOrigin, methods: c.Methods,
		methodList: strings.Join(c.Methods, ", "), headers: map[string]bool{},
		headerList: strings.Join(c.Headers, ", "), expose: strings.Join(c.ExposeHeaders, ", "), credentials: c.Credentials}
	for _, o := range c.Origins {
		p.origins[o] = o
	}
	for _, h := range c.Headers {
		p.headers[strings.ToLower(h)] = true
	}
	if c.MaxAge > 0 {
		p.maxAge = strconv.FormatInt(int64(c.MaxAge.Seconds()), 10)
	}
	return p
}

// allow returns the Access-Control-Allow-Origin value for a request from
// origin: "*", the origin (a string of the policy's), or "" when it is
// not allowed.
func (p *corsPolicy) allow(origin string) string {
	if p.any {
		return "*"
	}
	return p.origins[origin]
}

// cors runs a route's CORS policy before the request goes on: it notes
// the allowed origin for the response and answers a preflight itself.
// It reports whether the request was answered.
func (x *exchange) cors() bool {
	p := x.rt.cors
	origin := x.in.Header.Get("Origin")
	if origin == "" {
		return false // not a CORS request
	}
	x.corsOrigin = p.allow(origin)
	method := x.in.Header.Get("Access-Control-Request-Method")
	if x.in.Method != "OPTIONS" || method == "" {
		return false
	}
	if x.corsOrigin == "" || !p.preflightOK(method, x.in.Header) {
		body := errorBodies[403]
		x.respHdr = p.vary(append(x.respHdr[:0],
			httpmsg.Field{Name: "Content-Type", Value: textPlain},
			httpmsg.Field{Name: "X-Content-Type-Options", Value: "nosniff"}))
		if x.w.WriteHead(403, x.respHdr, int64(len(body))) == nil {
			x.w.Write(body)
		}
		return true
	}
	h := x.corsHeaders(x.respHdr[:0])
	h = append(h, httpmsg.Field{Name: "Access-Control-Allow-Methods", Value: p.methodList})
	if p.headerList != "" {
		h = append(h, httpmsg.Field{Name: "Access-Control-Allow-Headers", Value: p.headerList})
	}
	if p.maxAge != "" {
		h = append(h, httpmsg.Field{Name: "Access-Control-Max-Age", Value: p.maxAge})
	}
	h = append(h, httpmsg.Field{Name: "Vary", Value: "Access-Control-Request-Method, Access-Control-Request-Headers"})
	h = applyHeaders(h, x.rt.chain.respHeader)
	x.respHdr = h
	x.w.WriteHead(204, h, 0)
	return true
}

// preflightOK reports whether a preflight's method and headers are
// allowed (methods compared exactly, header names without case).
func (p *corsPolicy) preflightOK(method string, h httpmsg.Header) bool {
	ok := false
	for _, m := range p.methods {
		if m == method {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Access-Control-Request-Headers") {
			continue
		}
		for name := range strings.SplitSeq(f.Value, ",") {
			name = strings.TrimSpace(name)
			if name != "" && !p.headers[strings.ToLower(name)] {
				return false
			}
		}
	}
	return true
}

// vary adds Vary: Origin when the answer depends on the origin.
func (p *corsPolicy) vary(h httpmsg.Header) httpmsg.Header {
	if p.any {
		return h
	}
	return append(h, httpmsg.Field{Name: "Vary", Value: "Origin"})
}

// corsHeaders replaces the upstream's CORS fields in h with the route's:
// the allowed origin, credentials and exposed headers, and Vary.
func (x *exchange) corsHeaders(h httpmsg.Header) httpmsg.Header {
	p := x.rt.cors
	if p == nil {
		return h
	}
	out := h[:0]
	for _, f := range h {
		if len(f.Name) < 15 || !httpmsg.EqualFold(f.Name[:15], "Access-Control-") {
			out = append(out, f)
		}
	}
	h = p.vary(out)
	if x.corsOrigin == "" {
		return h
	}
	h = append(h, httpmsg.Field{Name: "Access-Control-Allow-Origin", Value: x.corsOrigin})
	if p.credentials {
		h = append(h, httpmsg.Field{Name: "Access-Control-Allow-Credentials", Value: "true"})
	}
	if p.expose != "" {
		h = append(h, httpmsg.Field{Name: "Access-Control-Expose-Headers", Value: p.expose})
	}
	return h
}
