package router

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"time"

	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
)

// exchange is the state of one request. Exchanges are pooled, and each one
// carries its own ReverseProxy whose callbacks are bound to it once, so a
// request passes its route and server to them without a context value.
type exchange struct {
	r     *Router
	l     *httpListener
	in    *http.Request
	start time.Time
	w     respWriter
	view  rule.HTTPRequest

	peer     netip.Addr
	clientIP string    // peer address without port, for forwarding headers
	realIP   [1]string // clientIP, as X-Real-Ip for matchers
	hdr      matchHeader
	trusted  bool
	origPath string // escaped path as received
	reqPath  string // escaped path after normalisation ($path)
	path     string // escaped path forwarded upstream
	query    string // raw query forwarded upstream ($query)

	rt      *route
	server  *upstream.Server
	outcome upstream.Outcome
	status  int // status for the log when none was written (499)
	tap     *bodyTap
	tunnel  io.Closer       // the upstream side of a 101, until ReverseProxy owns it
	octx    context.Context // outbound request context
	cancel  context.CancelCauseFunc

	proxy httputil.ReverseProxy
	body  respBody
	wd    watchdog
	buf   []byte
}

func newExchange(r *Router) *exchange {
	x := &exchange{r: r, buf: make([]byte, 0, 256)}
	x.proxy = httputil.ReverseProxy{
		Rewrite:        x.rewrite,
		ModifyResponse: x.modifyResponse,
		ErrorHandler:   x.proxyError,
		BufferPool:     buffers,
		FlushInterval:  0, // see proxy.go: streams are flushed anyway
		ErrorLog:       r.proxyLog,
	}
	x.wd.init()
	return x
}

func (x *exchange) begin(w http.ResponseWriter, r *http.Request, l *httpListener) {
	x.start = time.Now()
	x.w.w, x.in, x.l = w, r, l
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		x.clientIP = host
		x.peer, _ = netip.ParseAddr(host) // zero when unparsable
	}
	x.trusted = l.trusts(x.peer)
}

// serve routes the request and answers it.
func (x *exchange) serve() {
	h := x.in.Header
	if !x.trusted {
		stripForwarded(h)
	}
	httpsyntax.StripH2CUpgrade(h) // never tunneled; the listener strips it too
	stripConnectionOptions(h)
	if !x.buildView() {
		x.plainError(http.StatusBadRequest)
		return
	}
	x.rt = x.l.match(&x.view)
	if x.rt == nil {
		x.notFound()
		return
	}
	x.path = x.rt.chain.rewritePath(x.reqPath)
	if a := x.rt.chain.answer; a != nil {
		x.answer(a)
		return
	}
	x.forward()
}

// buildView fills the matcher's view of the request (rules-semantics.md
// §3). It reports false when the path must be answered 400.
func (x *exchange) buildView() bool {
	r := x.in
	if r.URL.Opaque != "" {
		return false // "GET a:b HTTP/1.1": no path to route or forward
	}
	if x.l.normalize && strings.IndexByte(r.RequestURI, '#') >= 0 {
		return false // §3.1 step 1: Go would have escaped it to %23
	}
	x.origPath = r.URL.EscapedPath()
	x.reqPath, x.query = x.origPath, r.URL.RawQuery
	var realIP []string
	if x.clientIP != "" {
		x.realIP[0] = x.clientIP
		realIP = x.realIP[:]
	}
	x.hdr = newMatchHeader(r.Header, x.trusted, r.TLS != nil, realIP)
	routing := ""
	if x.l.normalize {
		clean, rp, ok := rule.NormalizePath(x.origPath)
		if !ok {
			return false
		}
		x.reqPath, routing = clean, rp
		x.query = rule.NormalizeQuery(x.query)
	} else {
		routing = rule.RoutingPath(x.origPath)
	}
	x.view = rule.HTTPRequest{
		Method:   r.Method,
		Host:     rule.CanonicalHost(r.Host),
		Path:     routing,
		RawQuery: x.query,
		Header:   &x.hdr,
		ClientIP: x.peer,
	}
	return true
}

var (
	textPlain = []string{"text/plain; charset=utf-8"}
	noSniff   = []string{"nosniff"}
)

func (x *exchange) notFound() {
	h := x.w.Header()
	h["Content-Type"], h["X-Content-Type-Options"] = textPlain, noSniff
	h["Content-Length"] = x.l.notFoundLen
	x.w.WriteHeader(http.StatusNotFound)
	x.w.Write(x.l.notFound)
}

// plainError answers code with its status text and nothing internal.
func (x *exchange) plainError(code int) {
	http.Error(&x.w, http.StatusText(code), code)
}

// answer serves a respond or redirect route.
func (x *exchange) answer(a *answer) {
	h := x.w.Header()
	applyHeaders(h, x.rt.chain.respHeader)
	if a.target != nil {
		x.buf = a.location(x.buf[:0], x.reqPath, x.query)
		h["Location"] = []string{string(x.buf)}
		x.w.WriteHeader(a.code)
		return
	}
	if len(a.body) > 0 {
		if _, ok := h["Content-Type"]; !ok {
			h["Content-Type"] = textPlain
		}
	}
	h["Content-Length"] = a.length
	x.w.WriteHeader(a.code)
	x.w.Write(a.body)
}

// stripForwarded deletes the forwarding headers an untrusted peer sent
// (rules-semantics.md §3.1 step 5), before matching sees them. Underscore
// spellings go too, since some backends treat '_' as '-'.
func stripForwarded(h http.Header) {
	for k := range h {
		if isForwardingHeader(k) {
			delete(h, k)
		}
	}
}

var forwardingHeaders = []string{
	"forwarded", "x-real-ip", "x-scheme", "x-forwarded-for", "x-forwarded-proto",
	"x-forwarded-host", "x-forwarded-port", "x-forwarded-server", "x-forwarded-uri",
	"x-forwarded-method", "x-forwarded-prefix", "x-forwarded-scheme",
	"x-forwarded-tls-client-cert", "x-forwarded-tls-client-cert-info",
}

func isForwardingHeader(k string) bool {
	if k == "" || (k[0]|0x20 != 'x' && k[0]|0x20 != 'f') {
		return false
	}
	for _, f := range forwardingHeaders {
		if len(f) == len(k) && equalFoldDash(k, f) {
			return true
		}
	}
	return false
}

// equalFoldDash compares k to the lower-case f ignoring ASCII case and
// treating '_' in k as '-'.
func equalFoldDash(k, f string) bool {
	for i := range len(k) {
		c := k[i]
		if c == '_' {
			c = '-'
		} else if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != f[i] {
			return false
		}
	}
	return true
}

// stripConnectionOptions deletes the headers the client listed in
// Connection before matching sees them (rules-semantics.md §3.1 step 5;
// ReverseProxy would drop them before forwarding anyway). The forwarding
// headers edgeway manages and the Upgrade header of an upgrade stay.
func stripConnectionOptions(h http.Header) {
	for _, v := range h["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" || strings.EqualFold(tok, "upgrade") || strings.EqualFold(tok, "close") || isForwardingHeader(tok) {
				continue
			}
			h.Del(tok)
		}
	}
}

func (x *exchange) bytesIn() int64 {
	if x.tap == nil {
		return 0
	}
	return x.tap.n.Load()
}

func (x *exchange) logStatus() int {
	if x.status != 0 {
		return x.status
	}
	return x.w.status
}

// reset clears the exchange for reuse.
func (x *exchange) reset() {
	x.l, x.in, x.w, x.view = nil, nil, respWriter{}, rule.HTTPRequest{}
	x.peer, x.clientIP, x.trusted = netip.Addr{}, "", false
	x.realIP[0], x.hdr = "", matchHeader{}
	x.origPath, x.reqPath, x.path, x.query = "", "", "", ""
	x.rt, x.server, x.outcome, x.status = nil, nil, upstream.Success, 0
	x.tap, x.octx, x.cancel, x.body, x.buf = nil, nil, nil, respBody{}, x.buf[:0]
	x.tunnel = nil
	x.proxy.Transport = nil
}
