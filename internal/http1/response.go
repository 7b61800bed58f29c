package http1

import (
	"bytes"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// DefaultMaxResponseBytes is the response head cap when ParseResponse's
// lim is zero, as the upstream client's.
const DefaultMaxResponseBytes = 1 << 20

// Response is a response head from an upstream server.
type Response struct {
	// ProtoMinor is x in HTTP/1.x.
	ProtoMinor int
	// Status is the three-digit status code, 100 to 999.
	Status int
	// Reason is the reason phrase, possibly empty.
	Reason string
	// Header holds every field as received, framing fields included.
	Header httpmsg.Header
	// ContentLength is the Content-Length, -1 when there is none or the
	// body is chunked. For a 304 (or the answer to HEAD) it describes the
	// representation, not a body.
	ContentLength int64
	// Chunked: the body is chunked; decode it with a Chunked.
	Chunked bool
	// Close: the connection cannot carry another exchange: Connection:
	// close, HTTP/1.0 without keep-alive, a body delimited by the close,
	// or Transfer-Encoding sent with Content-Length (RFC 9112 §6.3: the
	// message may be a smuggling attempt; the chunked framing wins).
	Close bool
	// NoBody: the status has no body (1xx, 204, 304; RFC 9112 §6.3).
	// A response to HEAD, or a 2xx to CONNECT, has none either: the
	// caller knows the method.
	NoBody bool
	// UntilClose: the body has neither length nor chunking and runs to
	// the end of the connection; Close is set too.
	UntilClose bool
}

// ParseResponse parses one response head at the start of b (RFC 9112 §4)
// into resp and returns its length: the body starts at b[n:]. lim caps
// the head (zero or less: DefaultMaxResponseBytes). Like ParseRequest it
// returns ErrIncomplete for a partial head, and it shares b's bytes and
// resp.Header's array the same way. Errors are *Error with status 502.
//
// The field rules are the request's: no obs-fold, no whitespace before
// a colon, no control bytes but HTAB in values. Repeated identical
// Content-Length values are accepted (RFC 9110 §8.6), differing ones
// are not. Transfer-Encoding must be one "chunked" field, as net/http
// requires: a response framed by another coding cannot be forwarded
// once the proxy drops that hop-by-hop field. HTTP/1.0 responses may
// not use it (RFC 9112 §6.1).
func ParseResponse(b []byte, resp *Response, lim int) (n int, err error) {
	if lim <= 0 {
		lim = DefaultMaxResponseBytes
	}
	win := b
	if len(win) > lim {
		win = win[:lim]
	}
	var l lengths
	n, err = parseResponse(win, resp, &l)
	if err == ErrIncomplete && len(b) >= lim {
		err = errRespTooLarge
	}
	if err == nil {
		err = l.finishResponse(resp)
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

func parseResponse(b []byte, resp *Response, l *lengths) (int, error) {
	line, i, ok := nextLine(b, 0)
	if !ok {
		if m := min(len(b), 7); string(b[:m]) != "HTTP/1."[:m] {
			return 0, respErr(rStatusLine)
		}
		return 0, ErrIncomplete
	}
	if r := statusLine(line, resp); r != rOK {
		return 0, respErr(r)
	}
	resp.Header = resp.Header[:0]
	for {
		line, next, ok := nextLine(b, i)
		switch {
		case !ok:
			return 0, ErrIncomplete
		case len(line) == 0:
			return next, nil
		}
		name, value, r := parseField(line)
		if r != rOK {
			return 0, respErr(r)
		}
		l.add(kindOf(name), value)
		resp.Header = append(resp.Header, httpmsg.Field{Name: str(name), Value: str(value)})
		i = next
	}
}

// statusLine parses HTTP-version SP 3DIGIT SP reason-phrase. Like
// net/http it also takes "HTTP/1.1 200" without the second SP.
func statusLine(line []byte, resp *Response) reason {
	if bytes.IndexByte(line, '\r') >= 0 {
		return rBareCR
	}
	if len(line) < 12 || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return rStatusLine
	}
	major, minor, ok := parseVersion(line[:8])
	if !ok || major != 1 {
		return rStatusLine
	}
	code := 0
	for _, c := range line[9:12] {
		if !isDigit(c) {
			return rStatusLine
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 {
		return rStatusLine
	}
	var reason []byte
	if len(line) > 12 {
		reason = line[13:]
	}
	if r := checkValue(reason); r != rOK {
		return r
	}
	resp.ProtoMinor, resp.Status, resp.Reason = minor, code, str(reason)
	return rOK
}

// finishResponse decides the framing of a response (RFC 9112 §6.3).
func (l *lengths) finishResponse(resp *Response) error {
	http10 := resp.ProtoMinor == 0
	switch {
	case l.clBad:
		return respErr(rContentLength)
	case l.teCount > 1 || l.teBad:
		return respErr(rTransferEncoding)
	case l.teCount > 0 && http10:
		return respErr(rTEHTTP10)
	}
	s := resp.Status
	resp.NoBody = s < 200 || s == 204 || s == 304
	resp.ContentLength = -1
	if l.clCount > 0 && l.teCount == 0 {
		resp.ContentLength = l.cl
	}
	resp.Chunked = l.teCount > 0 && !resp.NoBody
	resp.UntilClose = !resp.NoBody && !resp.Chunked && resp.ContentLength < 0
	resp.Close = !l.keepAlive(http10) || resp.UntilClose || (l.teCount > 0 && l.clCount > 0)
	return nil
}
