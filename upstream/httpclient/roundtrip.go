package httpclient

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// RoundTrip is Do for an *http.Request, so that the Transport is an
// http.RoundTripper (for tools and tests): it sends req to req.URL.Host
// and copies the response head into an *http.Response. A 101's Body is
// the tunnel, an io.ReadWriteCloser. The router does not use it: the
// copies cost what net/http costs.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil || (req.URL.Scheme != "http" && req.URL.Scheme != "") {
		closeBody(req)
		return nil, &Error{Kind: KindRequest, Addr: req.Host, Err: errors.New("only http:// is supported")}
	}
	out, err := outbound(req)
	if err != nil {
		closeBody(req)
		return nil, &Error{Kind: KindRequest, Addr: req.URL.Host, Err: err}
	}
	resp := new(Response)
	if err := t.Do(req.URL.Host, out, resp); err != nil {
		closeBody(req)
		var be *BodyError
		if errors.As(err, &be) {
			return nil, be.Err
		}
		return nil, err
	}
	return toHTTP(req, resp), nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// outbound copies req into a Request.
func outbound(req *http.Request) (*Request, error) {
	u := req.URL
	target := u.RequestURI()
	if u.Opaque != "" {
		return nil, errBadURI
	}
	host := req.Host
	if host == "" {
		host = u.Host
	}
	out := &Request{Method: req.Method, Target: target, Host: host, Ctx: req.Context()}
	if out.Method == "" {
		out.Method = "GET"
	}
	for k, vv := range req.Header {
		for _, v := range vv {
			if k == "User-Agent" && v == "" {
				continue
			}
			out.Header = append(out.Header, httpmsg.Field{Name: k, Value: v})
		}
	}
	if req.Close && req.Header["Connection"] == nil {
		out.Header = append(out.Header, httpmsg.Field{Name: "Connection", Value: "close"})
	}
	if req.Body != nil && req.Body != http.NoBody {
		out.Body, out.ContentLength = req.Body, req.ContentLength
		if out.ContentLength <= 0 {
			out.ContentLength = -1
		}
		if len(req.Trailer) > 0 {
			out.Trailer = func() httpmsg.Header { return httpmsg.AppendMap(nil, req.Trailer) }
		}
	}
	if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.Got1xxResponse != nil {
		out.OnInformational = func(code int, h httpmsg.Header) error {
			return tr.Got1xxResponse(code, textproto.MIMEHeader(headerMap(h)))
		}
	}
	return out, nil
}

// headerMap copies h into a header map; the strings are cloned, since
// h's point into a reused buffer.
func headerMap(h httpmsg.Header) http.Header {
	m := make(http.Header, len(h))
	for _, f := range h {
		k := http.CanonicalHeaderKey(strings.Clone(f.Name))
		m[k] = append(m[k], strings.Clone(f.Value))
	}
	return m
}

func toHTTP(req *http.Request, resp *Response) *http.Response {
	r := &http.Response{
		Status:     strconv.Itoa(resp.Status) + " " + http.StatusText(resp.Status),
		StatusCode: resp.Status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: headerMap(resp.Header), ContentLength: resp.ContentLength, Request: req,
		Body: http.NoBody,
	}
	switch {
	case resp.Conn != nil:
		r.Body = &tunnelBody{nc: resp.Conn, pre: resp.Pre}
	case resp.Body != nil:
		r.Trailer = http.Header{}
		r.Body = &trailerBody{resp: resp, dst: r.Trailer}
	}
	return r
}

// trailerBody copies the trailer into the http.Response at EOF.
type trailerBody struct {
	resp *Response
	dst  http.Header
}

func (b *trailerBody) Read(p []byte) (int, error) {
	n, err := b.resp.Body.Read(p)
	if err == io.EOF {
		for k, v := range headerMap(b.resp.Trailer) {
			b.dst[k] = v
		}
	}
	return n, err
}

func (b *trailerBody) Close() error { return b.resp.Body.Close() }

// tunnelBody is the raw connection after a 101; its first reads return
// the bytes that arrived with the response head.
type tunnelBody struct {
	nc  net.Conn
	pre []byte
}

func (u *tunnelBody) Read(p []byte) (int, error) {
	if len(u.pre) > 0 {
		n := copy(p, u.pre)
		u.pre = u.pre[n:]
		return n, nil
	}
	return u.nc.Read(p)
}

func (u *tunnelBody) Write(p []byte) (int, error) { return u.nc.Write(p) }

func (u *tunnelBody) Close() error { return u.nc.Close() }
