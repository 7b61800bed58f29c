package httpclient

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/internal/panics"
)

var errInformationalPanic = errors.New("relaying an informational response panicked")

// h2Exchange is one request over HTTP/2. The request body streams on the
// http2 connection's writer goroutine while the caller reads the response,
// so both directions flow at once (a gRPC bidi stream); the response
// body's EOF brings the trailers (grpc-status).
type h2Exchange struct {
	h      *h2Client
	addr   string
	req    *Request
	resp   *Response
	ctx    context.Context // the stream's; cancelled when the exchange ends
	cancel context.CancelCauseFunc
	cc     *http2.ClientConn
	hr     *http.Request
	res    *http.Response
	body   h2ReqBody
	ended  bool

	mu       sync.Mutex // orders the body writer's timer arming against the head's arrival
	headDone bool
	timer    *time.Timer // the response-header timeout, once armed
	bodyErr  error       // the request body's read error, if it failed
	// respTimeout is the response-header timeout, read from the request
	// when the exchange starts: the body writer's goroutine arms it, and
	// must not read the caller's Request, which the caller may reuse.
	respTimeout time.Duration
}

// do sends req over HTTP/2 and fills resp once the response head arrived.
func (h *h2Client) do(addr string, req *Request, resp *Response) error {
	x := &h2Exchange{h: h, addr: addr, req: req, resp: resp, respTimeout: h.t.respTimeout}
	if req.ResponseTimeout > 0 {
		x.respTimeout = req.ResponseTimeout
	}
	x.body.x = x
	if err := x.build(); err != nil {
		return err
	}
	parent := req.context()
	if err := parent.Err(); err != nil {
		return err
	}
	x.ctx, x.cancel = context.WithCancelCause(parent)
	if req.OnInformational != nil {
		x.ctx = httptrace.WithClientTrace(x.ctx, &httptrace.ClientTrace{
			// Called on x/net's read loop goroutine, which does not
			// recover.
			Got1xxResponse: func(code int, h textproto.MIMEHeader) (err error) {
				defer func() {
					if v := recover(); v != nil {
						panics.Report("upstream h2 informational response", v, slog.String("server", addr))
						err = errInformationalPanic
					}
				}()
				return req.OnInformational(code, httpmsg.AppendMap(nil, http.Header(h)))
			},
		})
	}
	x.hr = x.hr.WithContext(x.ctx)
	if req.Cancel != nil && !req.Cancel.attachStop(func() { x.cancel(errCanceled) }) {
		x.cancel(nil)
		return errCanceled
	}
	key := h2Key{addr: addr}
	if h.t.proxyVer != 0 {
		key.client = req.Client
	}
	for attempt := 0; ; attempt++ {
		cc, err := h.conn(x.ctx, key, req)
		if err != nil {
			if isContextErr(err) {
				err = x.failure(err)
			}
			x.end()
			return err
		}
		x.cc = cc
		if !x.body.active() {
			x.armTimeout()
		}
		res, err := cc.RoundTrip(x.hr)
		if err == nil {
			x.res = res
			break
		}
		// A stream the server refused was not processed (RFC 9113 §8.7):
		// a request without a body goes once more, on another stream.
		var se http2.StreamError
		if attempt == 0 && !x.body.active() && errors.As(err, &se) && se.Code == http2.ErrCodeRefusedStream && x.ctx.Err() == nil {
			continue
		}
		err = x.failure(err)
		x.end()
		return err
	}
	if !x.endHead() {
		x.end()
		return &Error{Kind: KindRead, Addr: addr, Err: errRespTimeout}
	}
	x.respond()
	return nil
}

// build maps the request to an *http.Request, refusing what must not be
// sent: a field that is not valid HTTP (400), an upgrade or CONNECT that
// HTTP/2 cannot carry (502).
func (x *h2Exchange) build() error {
	req := x.req
	method := cmp.Or(req.Method, "GET")
	switch {
	case method == "CONNECT":
		return &RequestError{Status: 502, Addr: x.addr, Err: errH2Connect}
	case !httpsyntax.ValidToken(method):
		return &RequestError{Status: 400, Addr: x.addr, Err: errBadHeader}
	case req.Host != "" && !httpguts.ValidHostHeader(req.Host):
		return &RequestError{Status: 400, Addr: x.addr, Err: errBadHost}
	}
	// Every string of the head is copied into one fresh array: x/net's
	// HPACK encoder keeps the names and values it indexes (the path and
	// authority among them) for the life of the upstream connection, and
	// the caller's strings may view buffers reused by the next request.
	cp := newStringCopier(len(method) + len(req.Target) + len(req.Host) + fieldBytes(req.Header))
	method = cp.clone(method)
	u, err := h2URL(x.addr, cp.clone(req.Target), req.Host)
	if err != nil {
		return err
	}
	hdr, err := h2Header(x.addr, req.Header, &cp)
	if err != nil {
		return err
	}
	x.hr = &http.Request{Method: method, URL: u, Host: cp.clone(req.Host), Header: hdr,
		Proto: "HTTP/2.0", ProtoMajor: 2}
	if req.Body != nil && req.ContentLength != 0 {
		x.body.r, x.body.cl, x.body.trailer = req.Body, req.ContentLength, req.Trailer
		x.hr.Body, x.hr.ContentLength = &x.body, req.ContentLength
		if req.Trailer != nil {
			x.hr.Trailer = declaredTrailers(req.Header) // filled at the body's EOF
		}
	}
	return nil
}

// h2URL is the URL whose RequestURI x/net/http2 sends as :path: the
// target as it is, escaped bytes and all.
func h2URL(addr, t, host string) (*url.URL, error) {
	if !validH2Target(t) {
		return nil, &RequestError{Status: 400, Addr: addr, Err: errBadURI}
	}
	path, query, hasQuery := t, "", false
	if i := strings.IndexByte(t, '?'); i >= 0 {
		path, query, hasQuery = t[:i], t[i+1:], true
	}
	if strings.HasPrefix(path, "//") {
		// An opaque "//..." would read as a network path; x/net strips
		// "http://" + authority from the front of such a URI.
		path = "//" + cmp.Or(host, addr) + path
	}
	return &url.URL{Scheme: "http", Host: addr, Opaque: path, RawQuery: query,
		ForceQuery: hasQuery && query == ""}, nil
}

// validH2Target accepts origin-form and "*", with no byte that cannot be in
// a request-target.
func validH2Target(t string) bool {
	if t == "" || (t[0] != '/' && t != "*") {
		return false
	}
	for i := 0; i < len(t); i++ {
		if c := t[i]; c <= ' ' || c == 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// h2Header copies the fields to send. Connection-specific fields never go
// to an HTTP/2 server (RFC 9113 §8.2.2): Connection and the fields it
// names (the router removed those), Keep-Alive, Proxy-Connection,
// Transfer-Encoding, Upgrade (refused: 502), and TE other than
// "trailers", which gRPC servers expect and is forwarded. Host is
// :authority and Content-Length comes from the body.
// Names and values are copied with cp.
func h2Header(addr string, h httpmsg.Header, cp *stringCopier) (http.Header, error) {
	out := make(http.Header, len(h)+1)
	ua := false
	for _, f := range h {
		if !httpsyntax.ValidToken(f.Name) || !httpsyntax.ValidFieldValue(f.Value) {
			return nil, &RequestError{Status: 400, Addr: addr, Err: errBadHeader}
		}
		switch {
		case httpmsg.EqualFold(f.Name, "Upgrade"):
			return nil, &RequestError{Status: 502, Addr: addr, Err: errH2Upgrade}
		case httpmsg.EqualFold(f.Name, "TE"):
			continue // set below
		case h2Skip(f.Name):
			continue
		case httpmsg.EqualFold(f.Name, "User-Agent"):
			ua = true
		}
		name := cp.clone(f.Name)
		out[name] = append(out[name], cp.clone(f.Value))
	}
	if !ua {
		out["User-Agent"] = []string{""} // no Go default in its place
	}
	// The router never forwards a client's TE (hop-by-hop); edgeway
	// relays trailers, and gRPC servers may insist on hearing so.
	out["Te"] = []string{"trailers"}
	return out, nil
}

// declaredTrailers is the trailer map of a request with a body: the
// fields its Trailer header announced (x/net/http2 sends them as the
// "trailer" field; Go's servers keep only announced trailers), or none.
func declaredTrailers(h httpmsg.Header) http.Header {
	m := http.Header{}
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Trailer") {
			continue
		}
		for name := range strings.SplitSeq(f.Value, ",") {
			name = strings.TrimSpace(name)
			if httpsyntax.ValidToken(name) && !h2Skip(name) {
				m[http.CanonicalHeaderKey(name)] = nil
			}
		}
	}
	return m
}

func h2Skip(name string) bool {
	for _, s := range [...]string{"Host", "Content-Length", "Transfer-Encoding", "Connection",
		"Keep-Alive", "Proxy-Connection", "Trailer", "HTTP2-Settings"} {
		if httpmsg.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// armTimeout starts the response-header timeout: at once for a request
// without a body, once the body was sent otherwise (as HTTP/1.1 does), so
// that a stream the client keeps open is not cut.
func (x *h2Exchange) armTimeout() {
	d := x.respTimeout
	if d <= 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.headDone && x.timer == nil {
		x.timer = time.AfterFunc(d, func() { x.cancel(errRespTimeout) })
	}
}

// endHead stops the response-header timeout; false when it fired first.
func (x *h2Exchange) endHead() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.headDone = true
	return x.timer == nil || x.timer.Stop()
}

// failure turns a round-trip error into what Do returns: the caller's
// context error, *Error for a timeout, a cancel or the server's failure,
// *BodyError when the client's body broke.
func (x *h2Exchange) failure(err error) error {
	if perr := x.req.context().Err(); perr != nil {
		return perr
	}
	switch cause := context.Cause(x.ctx); cause {
	case errRespTimeout, errCanceled:
		return &Error{Kind: KindRead, Addr: x.addr, Err: cause}
	}
	x.mu.Lock()
	berr := x.bodyErr
	x.mu.Unlock()
	if berr != nil {
		return &BodyError{Err: berr}
	}
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		return &Error{Kind: KindProtocol, Addr: x.addr, Err: err}
	}
	return &Error{Kind: KindRead, Addr: x.addr, Err: err}
}

// respond fills resp from the response head.
func (x *h2Exchange) respond() {
	res := x.res
	*x.resp = Response{Status: res.StatusCode, Header: httpmsg.AppendMap(nil, res.Header), ContentLength: res.ContentLength}
	head := x.hr.Method == "HEAD"
	if head || res.StatusCode == 204 || res.StatusCode == 304 || res.ContentLength == 0 {
		if !head || res.ContentLength < 0 {
			x.resp.ContentLength = 0
		}
		x.end()
		return
	}
	x.resp.Body = &h2RespBody{x: x}
}

// end finishes the exchange once: the stream is reset if still open (a
// request body still streaming, a response not read to its end), the
// Canceler lets go, and after Transport.Close the connection is shut
// down once its other streams end.
func (x *h2Exchange) end() {
	if x.ended {
		return
	}
	x.ended = true
	x.mu.Lock()
	if x.timer != nil {
		x.timer.Stop()
	}
	x.mu.Unlock()
	if x.req.Cancel != nil {
		x.req.Cancel.detach()
	}
	// Cancelled first: the body's Close would otherwise wait for the
	// request writer, which may be blocked reading the client.
	x.cancel(nil)
	if x.res != nil {
		x.res.Body.Close()
	}
	if x.cc != nil && x.h.isClosed() {
		cc := x.cc
		panics.Go("upstream h2 shutdown", func() { cc.Shutdown(context.Background()) })
	}
}

// h2RespBody is the response body; its EOF copies the trailers into the
// Response.
type h2RespBody struct {
	x      *h2Exchange
	closed bool
}

func (b *h2RespBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errBodyClosed
	}
	n, err := b.x.res.Body.Read(p)
	switch {
	case err == io.EOF:
		b.x.resp.Trailer = httpmsg.AppendMap(nil, b.x.res.Trailer)
	case err != nil:
		err = b.x.failure(err)
	}
	return n, err
}

func (b *h2RespBody) Close() error {
	if !b.closed {
		b.closed = true
		b.x.end()
	}
	return nil
}

// h2ReqBody is the request body as the http2 writer reads it: it notes
// the client's read errors (so that the failure is the client's), checks
// a Content-Length, fills the trailers at EOF and then arms the
// response-header timeout.
// It runs on the connection's writer goroutine, possibly after Do's
// caller moved on: it holds its own copies of what it needs from the
// Request.
type h2ReqBody struct {
	x       *h2Exchange
	r       io.Reader
	n, cl   int64
	trailer func() httpmsg.Header
}

func (b *h2ReqBody) active() bool { return b.r != nil }

// Read runs on x/net's writer goroutine, which does not recover: a panic
// behind it fails the request as a broken body rather than the process.
func (b *h2ReqBody) Read(p []byte) (n int, err error) {
	x := b.x
	defer func() {
		if v := recover(); v != nil {
			panics.Report("upstream h2 request body", v, slog.String("server", x.addr))
			n, err = 0, ErrBodyPanic
			x.noteBodyErr(err)
		}
	}()
	n, err = b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF && b.cl > 0 && b.n < b.cl {
		err = errBodyShort
	}
	switch {
	case err == io.EOF:
		if b.trailer != nil {
			for _, f := range b.trailer() {
				if httpsyntax.ValidToken(f.Name) && httpsyntax.ValidFieldValue(f.Value) && !h2Skip(f.Name) {
					// Copied: HPACK keeps what it indexes (see build).
					k := strings.Clone(http.CanonicalHeaderKey(f.Name))
					x.hr.Trailer[k] = append(x.hr.Trailer[k], strings.Clone(f.Value))
				}
			}
		}
		x.armTimeout()
	case err != nil:
		x.noteBodyErr(err)
	}
	return n, err
}

// noteBodyErr keeps the first error of the request body.
func (x *h2Exchange) noteBodyErr(err error) {
	x.mu.Lock()
	if x.bodyErr == nil {
		x.bodyErr = err
	}
	x.mu.Unlock()
}

// Close does nothing: the body is the client's, its front end closes it.
func (b *h2ReqBody) Close() error { return nil }
