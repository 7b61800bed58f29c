package h3

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/http/httpguts"
)

var readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}

// serveStream serves one request stream.
func (c *serverConn) serveStream(st *quic.Stream) {
	defer c.done()
	s := c.s
	br := readerPool.Get().(*bufio.Reader)
	br.Reset(st)
	defer func() { br.Reset(nil); readerPool.Put(br) }()
	fr := &frameReader{r: br}
	st.SetReadDeadline(time.Now().Add(s.o.ReadHeaderTimeout))
	req, err := c.readRequest(st, fr)
	if err != nil {
		c.refuse(st, err)
		return
	}
	s.stats.requests.Add(1)
	w := newResponseWriter(st)
	if !c.handshakeComplete() {
		if !safeMethod(req.Method) {
			s.stats.early.Add(1)
			w.WriteHeader(http.StatusTooEarly)
			w.finish()
			st.CancelRead(quic.StreamErrorCode(ErrNoError))
			return
		}
		req.Header.Set("Early-Data", "1")
	}
	if !c.serveHandler(w, req) {
		return
	}
	if err := w.finish(); err != nil {
		st.CancelWrite(quic.StreamErrorCode(ErrInternal))
	}
	// A body the handler left unread is not wanted (§4.1.2).
	if b, ok := req.Body.(*body); ok && !b.done {
		st.CancelRead(quic.StreamErrorCode(ErrNoError))
	}
}

// serveHandler runs the handler; false when it aborted the response.
func (c *serverConn) serveHandler(w *responseWriter, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				c.s.log.Error("h3: handler panic", "panic", v, "remote", c.remote)
			}
			w.st.CancelWrite(quic.StreamErrorCode(ErrInternal))
			w.st.CancelRead(quic.StreamErrorCode(ErrRequestCancelled))
			ok = false
		}
	}()
	c.s.o.Handler.ServeHTTP(w, req)
	return true
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// refuse answers a request that could not be read: 431 for a header
// section over the limit, a stream reset otherwise.
func (c *serverConn) refuse(st *quic.Stream, err error) {
	if errors.Is(err, errFieldsTooLarge) {
		w := newResponseWriter(st)
		w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
		w.finish()
		st.CancelRead(quic.StreamErrorCode(ErrNoError))
		return
	}
	code := ErrRequestIncomplete
	var he *Error
	if errors.As(err, &he) {
		code = he.Code
	} else if errors.Is(err, errQPACK) {
		c.conn.CloseWithError(quic.ApplicationErrorCode(ErrQPACKDecompression), "")
		return
	}
	st.CancelRead(quic.StreamErrorCode(code))
	st.CancelWrite(quic.StreamErrorCode(code))
}

// readRequest reads the request's header section and builds the
// request; the body is read by the handler.
func (c *serverConn) readRequest(st *quic.Stream, fr *frameReader) (*http.Request, error) {
	typ, n, err := fr.next()
	if err != nil {
		return nil, err
	}
	if typ != frameHeaders {
		return nil, protoErr(ErrFrameUnexpected, "request stream must open with HEADERS")
	}
	limit := c.s.o.MaxHeaderBytes
	p, err := fr.payload(n, limit+limit/2, errFieldsTooLarge)
	if err != nil {
		return nil, err
	}
	var h requestHead
	h.header = make(http.Header, 8)
	if err := decodeFieldSection(p, limit, h.add); err != nil {
		return nil, err
	}
	req, err := h.request()
	if err != nil {
		return nil, err
	}
	cl, err := parseContentLength(req.Header["Content-Length"])
	if err != nil {
		return nil, protoErr(ErrMessage, "%v", err)
	}
	ctx := context.WithValue(st.Context(), http.LocalAddrContextKey, c.local)
	req = req.WithContext(ctx)
	req.RemoteAddr = c.remote
	req.TLS = c.tlsState()
	req.ContentLength = cl
	if _, ok := req.Header["Trailer"]; ok {
		req.Trailer = http.Header{}
	}
	if hasBody(st, fr.r) {
		req.Body = &body{fr: fr, declared: cl, trailer: req.Trailer, limit: limit}
		if cl < 0 {
			req.ContentLength = -1
		}
	} else {
		req.Body = http.NoBody
		if cl > 0 {
			return nil, errBodyTooShort
		}
		req.ContentLength = 0
	}
	st.SetReadDeadline(time.Time{})
	return req, nil
}

// hasBody reports whether anything follows the header section: bytes
// already buffered, or the first byte or the stream's end once it comes
// (within the read deadline; a request whose body has not started by then
// is taken to have one).
func hasBody(st *quic.Stream, br *bufio.Reader) bool {
	if br.Buffered() > 0 {
		return true
	}
	var one [1]byte
	n, err := st.Peek(one[:])
	return n > 0 || err != io.EOF
}

// requestHead collects a request's header section (RFC 9114 §4.3.1).
type requestHead struct {
	method, scheme, authority, path string
	header                          http.Header
	regular                         bool // a regular field has been seen
}

func (h *requestHead) add(f Field) error {
	if f.Name == "" || !httpguts.ValidHeaderFieldValue(f.Value) {
		return protoErr(ErrMessage, "invalid field")
	}
	if f.Name[0] == ':' {
		return h.pseudo(f)
	}
	h.regular = true
	if !httpguts.ValidHeaderFieldName(f.Name) || lowerName(f.Name) != f.Name {
		return protoErr(ErrMessage, "invalid field name %q", f.Name)
	}
	switch f.Name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return protoErr(ErrMessage, "connection-specific field %q", f.Name)
	case "te":
		if f.Value != "trailers" {
			return protoErr(ErrMessage, "te other than trailers")
		}
	}
	k := http.CanonicalHeaderKey(f.Name)
	h.header[k] = append(h.header[k], f.Value)
	return nil
}

func (h *requestHead) pseudo(f Field) error {
	if h.regular {
		return protoErr(ErrMessage, "pseudo-header after a regular field")
	}
	var dst *string
	switch f.Name {
	case ":method":
		dst = &h.method
	case ":scheme":
		dst = &h.scheme
	case ":authority":
		dst = &h.authority
	case ":path":
		dst = &h.path
	default:
		return protoErr(ErrMessage, "unknown pseudo-header %q", f.Name)
	}
	if *dst != "" {
		return protoErr(ErrMessage, "repeated %s", f.Name)
	}
	if f.Value == "" {
		return protoErr(ErrMessage, "empty %s", f.Name)
	}
	*dst = f.Value
	return nil
}

func (h *requestHead) request() (*http.Request, error) {
	if h.method == "" {
		return nil, protoErr(ErrMessage, "no :method")
	}
	host := h.authority
	if host == "" {
		host = h.header.Get("Host")
	}
	r := &http.Request{
		Method: h.method, Proto: "HTTP/3.0", ProtoMajor: 3, Header: h.header, Host: host,
	}
	if h.method == http.MethodConnect {
		if h.authority == "" || h.scheme != "" || h.path != "" {
			return nil, protoErr(ErrMessage, "malformed CONNECT")
		}
		r.URL = &url.URL{Host: h.authority}
		r.RequestURI = h.authority
		return r, nil
	}
	if h.scheme == "" || h.path == "" {
		return nil, protoErr(ErrMessage, "missing :scheme or :path")
	}
	u, err := url.ParseRequestURI(h.path)
	if err != nil && h.path != "*" {
		return nil, protoErr(ErrMessage, "invalid :path")
	}
	if u == nil {
		u = &url.URL{Path: "*"}
	}
	u.Scheme, u.Host = h.scheme, host
	r.URL, r.RequestURI = u, h.path
	if strings.EqualFold(h.scheme, "http") && h.authority == "" {
		return nil, protoErr(ErrMessage, "no authority")
	}
	return r, nil
}
