package router

import (
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"github.com/edgeway/edgeway/internal/bodybuf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/internal/ratelimit"
	"github.com/edgeway/edgeway/routes/rule"
	"github.com/edgeway/edgeway/upstream"
	"github.com/edgeway/edgeway/upstream/httpclient"
)

// exchange is the state of one request. Exchanges are pooled, and so is
// every slice they fill, so a typical proxied request allocates nothing in
// the router. What lives across requests (the router, the watchdog with
// its timer, the canceler and its bound method) is here; everything else
// is in the embedded requestState, which reset zeroes whole, keeping only
// the buffers: a field added there cannot be forgotten by reset.
type exchange struct {
	r        *Router
	idHdr    httpmsg.Header // response heads with the request ID, reused
	wd       watchdog
	cancel   httpclient.Canceler // aborts the upstream exchange (idle watchdog)
	cancelFn func(error)         // cancel.Cancel, bound once
	logBuf   [64]byte            // the access log's client address text
	traceHex [32]byte            // the access log's trace_id text
	pageBuf  []byte              // a rendered error page (writeText)
	certBuf  []byte              // the X-Forwarded-Client-Cert value
	tokBuf   []byte              // a bearer token, to hash (checkToken)
	rq       bodybuf.Queue       // a buffered response body (respbuf.go), started per response
	requestState
}

// requestState is what one request sets; see exchange.
type requestState struct {
	l     *httpListener
	in    *httpmsg.Request
	start time.Time
	w     respWriter
	view  rule.HTTPRequest

	peer     netip.Addr
	ipBuf    [48]byte  // peer address text; clientIP points into it
	clientIP string    // peer address without port, for forwarding headers
	realIP   [1]string // clientIP, as X-Real-Ip for matchers
	fields   fieldGetter
	hdr      matchHeader
	trusted  bool
	reqID    string // X-Request-Id: kept from a trusted peer, else made (requestID)
	origPath string // escaped path as received
	reqPath  string // escaped path after normalisation ($path)
	path     string // escaped path forwarded upstream
	query    string // raw query forwarded upstream ($query)

	rt       *route
	rtIndex  int // x.rt's index in x.l.routes; -1: none
	errKind  int // upstream error kind for the metrics; -1: none
	upStart  time.Time
	upHead   time.Duration // the last try's wait for the response head
	authUser string        // the user basic_auth verified; "" none
	// certID is the client certificate's identity (certIdentityOf);
	// nil: no certificate.
	certID *certIdentity
	// authFields are the fields forward_auth's answer grants upstream,
	// claimFields those of the jwt policy's token.
	authFields, claimFields []httpmsg.Field
	// tok is the bearer token checked under one jwt policy (checkToken),
	// for the JWTClaim matchers and the route's jwt step alike.
	tok struct {
		policy *jwtPolicy
		result tokenResult
		grant  jwtGrant
	}
	// slots are the max_in_flight places the request holds (released in
	// finish).
	slots  [maxHeldSlots]ratelimit.Slot
	nslots int
	// corsOrigin is the Access-Control-Allow-Origin of the answer: a
	// string of the route's policy; "" none.
	corsOrigin string
	tried      []*upstream.Server // servers tried, in order (retries)
	retrying   bool               // a retry holds a place in the pool's budget
	// serverDone: x.server's try was reported (Done) when it was retried.
	serverDone bool
	kept       []byte // the request body, kept for retries; nil: not kept
	bodyBuf    []byte // kept's buffer, reused
	server     *upstream.Server
	outcome    upstream.Outcome
	status     int // status for the log when none was written (499)
	tap        *bodyTap
	bufState   int            // bufNone, bufWhole, bufPartial (buffering.go)
	body       bodybuf.Buffer // the buffered request body
	bodyRd     bodybuf.Reader // the first try's reader of body
	eofProbe   [1]byte        // reads the end of a body of known length
	gate       *bodyGate      // the current try's request body gate; nil: no body sent
	out        httpclient.Request
	resp       httpclient.Response
	outHdr     httpmsg.Header // outbound request fields, reused
	respHdr    httpmsg.Header // response fields sent to the client, reused
	buf        []byte         // Forwarded value, redirect target
	xff        []byte         // X-Forwarded-For value
	target     []byte         // outbound request target
	tc         traceState     // tracing; zero when off (tracing.go)
	// splitCookie: the Set-Cookie pinning the client to the pool a
	// sticky split placed it on (a string of the route); "" none.
	splitCookie string
}

// maxKeptBody is the largest retry body buffer a pooled exchange keeps.
const maxKeptBody = 8 << 10

func newExchange(r *Router) *exchange {
	x := &exchange{r: r}
	x.cancelFn = x.cancel.Cancel
	x.wd.init()
	x.freshState(make([]byte, 0, 256), make([]byte, 0, 64), make([]byte, 0, 256),
		make(httpmsg.Header, 0, 32), make(httpmsg.Header, 0, 32), make([]*upstream.Server, 0, 4), nil)
	return x
}

// freshState makes s a new request's state over the given buffers,
// emptied. s is zeroed in place first (cheaper than building a value and
// copying it: the state is over a kilobyte).
func (s *requestState) freshState(buf, xff, target []byte, outHdr, respHdr httpmsg.Header, tried []*upstream.Server, bodyBuf []byte) {
	clear(outHdr)
	clear(respHdr)
	clear(tried)
	if cap(bodyBuf) > maxKeptBody {
		bodyBuf = nil // pooled exchanges keep small ones only
	}
	*s = requestState{}
	s.rtIndex, s.errKind, s.outcome = -1, -1, upstream.Success
	s.buf, s.xff, s.target = buf[:0], xff[:0], target[:0]
	s.outHdr, s.respHdr, s.tried, s.bodyBuf = outHdr[:0], respHdr[:0], tried[:0], bodyBuf
}

func (x *exchange) begin(w httpmsg.ResponseWriter, r *httpmsg.Request, l *httpListener) {
	x.start = time.Now()
	x.w.w, x.in, x.l = w, r, l
	if ap := r.RemoteAddr; ap.IsValid() {
		x.peer = ap.Addr().Unmap()
		b := x.peer.AppendTo(x.ipBuf[:0])
		// Lifetime: a view of the exchange's ipBuf, rewritten only by
		// the next begin; used for matching and the forwarding headers,
		// whose values are views too (bytesString's rule).
		x.clientIP = unsafe.String(unsafe.SliceData(b), len(b))
	}
	x.trusted = l.trusts(x.peer)
	x.requestID()
	if x.r.tracer != nil {
		x.startTrace()
	}
	clear(x.idHdr)
	x.w.id, x.w.hdr = x.reqID, &x.idHdr
}

// serve routes the request and answers it.
func (x *exchange) serve() {
	if x.l.access != nil && !x.l.access.admits(x.accessClient()) {
		x.denied()
		return
	}
	if !x.trusted {
		x.in.Header = stripForwarded(x.in.Header)
	}
	x.in.Header = httpsyntax.StripH2C(x.in.Header, false) // never tunneled
	x.in.Header = stripConnectionOptions(x.in.Header)
	if !x.buildView() {
		x.plainError(400)
		return
	}
	if x.rtIndex = x.l.matchIndex(&x.view); x.rtIndex < 0 {
		x.notFound()
		return
	}
	x.rt = x.l.routes[x.rtIndex]
	if x.rt.access != nil && !x.rt.access.admits(x.accessClient()) {
		x.denied()
		return
	}
	if x.rt.cors != nil && x.cors() {
		return
	}
	if x.rt.limits != nil && x.limited() {
		return
	}
	if x.rt.auth != nil && x.authenticate() {
		return
	}
	if x.rt.fwdAuth != nil && x.forwardAuthenticate() {
		return
	}
	if x.rt.jwt != nil && x.verifyJWT() {
		return
	}
	if x.redirectHTTPS() {
		return
	}
	x.path = x.rt.chain.rewritePath(x.reqPath)
	if a := x.rt.chain.answer; a != nil {
		x.answer(a)
		return
	}
	if x.rt.split != nil {
		x.pickSplit()
	}
	x.forward()
}

// buildView fills the matcher's view of the request (docs/rules.md
// §3). It reports false when the path must be answered 400.
func (x *exchange) buildView() bool {
	r := x.in
	t := r.Target
	if t == "" || (t[0] != '/' && t != "*" && !isAbsoluteForm(t)) {
		return false // "GET a:b HTTP/1.1": no path to route or forward
	}
	if x.l.normalize && strings.IndexByte(t, '#') >= 0 {
		return false // §3.1 step 1
	}
	x.origPath = r.Path()
	x.reqPath, x.query = x.origPath, r.RawQuery()
	var realIP []string
	if x.clientIP != "" {
		x.realIP[0] = x.clientIP
		realIP = x.realIP[:]
	}
	x.fields.h = r.Header
	x.hdr = newMatchHeader(&x.fields, x.trusted, r.TLS, realIP)
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
		Method:     r.Method,
		Host:       rule.CanonicalHost(r.Host),
		Path:       routing,
		RawQuery:   x.query,
		Header:     &x.hdr,
		ClientIP:   x.peer,
		ClientCert: r.ClientCert,
	}
	if r.ClientCert != nil {
		x.certID = certIdentityOf(r.ClientCert)
		x.view.ClientID = x.certID.rule
	}
	if x.l.jwts != nil { // a rule here asks JWTClaim; else no token is looked at
		x.view.Token = x
	}
	return true
}

// isAbsoluteForm reports whether t is "http://..." or "https://...".
func isAbsoluteForm(t string) bool {
	return len(t) > 7 && (strings.EqualFold(t[:7], "http://") || (len(t) > 8 && strings.EqualFold(t[:8], "https://")))
}

// reset readies the exchange for the next request: a zeroed state that
// keeps only the (emptied) buffers.
func (x *exchange) reset() {
	x.freshState(x.buf, x.xff, x.target, x.outHdr, x.respHdr, x.tried, x.bodyBuf)
}

// fieldGetter is rule.HeaderGetter over a field list: matchers look up
// canonical names; the values it returns live in a scratch array of the
// exchange until the next lookup.
type fieldGetter struct {
	h       httpmsg.Header
	scratch [4]string
	more    []string
}

// Values returns the values of name, compared without regard to case.
func (g *fieldGetter) Values(name string) []string {
	vals := g.scratch[:0]
	for i := range g.h {
		if httpmsg.EqualFold(g.h[i].Name, name) {
			if len(vals) == cap(vals) && cap(vals) == len(g.scratch) {
				vals = append(g.more[:0], vals...)
			}
			vals = append(vals, g.h[i].Value)
		}
	}
	if cap(vals) > len(g.scratch) {
		g.more = vals
	}
	if len(vals) == 0 {
		return nil
	}
	return vals
}
