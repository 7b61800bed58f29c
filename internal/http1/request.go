package http1

import (
	"bytes"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// DefaultMaxHeaderBytes is the request head cap when Limits.MaxHeaderBytes
// is zero, the listeners' default.
const DefaultMaxHeaderBytes = 32 << 10

// maxEmptyLines is how many empty lines ParseRequest skips before a
// request line (RFC 9112 §2.2 asks for at least one; net/http's server
// skips up to 4 CR or LF bytes after a POST).
const maxEmptyLines = 2

// Limits caps a request head.
type Limits struct {
	// MaxHeaderBytes caps the head: empty lines before the request line,
	// the request line, the field lines and the final empty line. Zero or
	// less means DefaultMaxHeaderBytes. A longer head is ErrHeadTooLarge.
	MaxHeaderBytes int
	// MaxFields caps the number of field lines, Host included. Zero or
	// less means no cap other than MaxHeaderBytes. More is
	// ErrHeadTooLarge.
	MaxFields int
}

// Framing is what a request head says about its body and connection.
type Framing struct {
	// Chunked: the body is chunked (Transfer-Encoding: chunked); decode it
	// with a Chunked.
	Chunked bool
	// ContentLength is the body length: 0 for none, -1 when Chunked.
	ContentLength int64
	// Upgrade: the request asks to switch protocols (an Upgrade field on
	// HTTP/1.1, h2c offers aside) or is a CONNECT. Bytes after the head
	// may belong to the new protocol if the answer is 101 or 2xx.
	Upgrade bool
	// Expect100: an HTTP/1.1 request with a body asked for 100-continue
	// (RFC 9110 §10.1.1); send "100 Continue" before reading the body.
	Expect100 bool
	// H2CUpgrade: the request offered an upgrade to h2c (RFC 7540 §3.2,
	// dropped by RFC 9113 §3.1). The offer is not taken: the Upgrade and
	// HTTP2-Settings fields were removed from req.Header.
	H2CUpgrade bool
	// KeepAlive: the connection may carry another request after this
	// exchange (RFC 9112 §9.3).
	KeepAlive bool
}

// ParseRequest parses one request head at the start of b (RFC 9112 §2 to
// §7) and fills req's Method, Target, Host, ProtoMajor, ProtoMinor,
// Header, ContentLength and Close; it leaves the other fields alone. On
// success n is the length of the head: the body starts at b[n:].
//
// When b does not hold a whole head yet, ParseRequest returns
// ErrIncomplete, or ErrHeadTooLarge once b is as long as the limit; a
// head that is already invalid in its first bytes is refused at once.
// Any other error is an *Error. req is only meaningful when err is nil.
//
// The strings in req point into b: b must not change while req is in use.
// Header reuses req.Header's array, so a request with no more fields than
// its capacity costs no allocation. Host is not in Header. For an
// absolute-form or authority-form target, Host is the target's authority
// (RFC 9112 §3.2.2), as net/http does; the Host field must still be there
// (once) on HTTP/1.1, CONNECT excepted.
//
// A head is refused (*Error, status 400 unless said) for anything two
// parsers could read differently: Content-Length with Transfer-Encoding,
// an empty, signed, listed, too large or differing Content-Length,
// Transfer-Encoding other than one "chunked" field (or on HTTP/1.0),
// obs-fold, whitespace before a colon, a field name that is not a token,
// control bytes other than HTAB in values (NUL, bare CR), a missing or
// repeated Host, more than two empty lines before the request line; a
// version other than 1.x is 505, "PRI * HTTP/2.0" is ErrPreface, an
// Expect other than 100-continue is 417. Lines may end in LF or CRLF.
func ParseRequest(b []byte, req *httpmsg.Request, lim Limits) (n int, f Framing, err error) {
	max := lim.MaxHeaderBytes
	if max <= 0 {
		max = DefaultMaxHeaderBytes
	}
	win := b
	if len(win) > max {
		win = win[:max]
	}
	var h reqHead
	n, err = h.parse(win, req, lim.MaxFields)
	if err == ErrIncomplete && len(b) >= max {
		err = ErrHeadTooLarge
		if bytes.IndexByte(win, '\n') < 0 {
			err = ErrTargetTooLong
		}
	}
	if err == nil {
		f, err = h.finish(req)
	}
	if err != nil {
		return 0, Framing{}, err
	}
	return n, f, nil
}

// reqHead collects what a request head says beyond its fields.
type reqHead struct {
	lengths
	http10   bool
	connect  bool
	auth     []byte // authority of an absolute-form or authority-form target
	hosts    int
	host     []byte
	upgrade  bool
	h2c      bool
	expect   bool // 100-continue
	expectNo bool // any other expectation
}

func (h *reqHead) parse(b []byte, req *httpmsg.Request, maxFields int) (int, error) {
	i, r := skipEmptyLines(b)
	switch {
	case r != rOK:
		return 0, reqErr(r)
	case i < 0:
		return 0, ErrIncomplete
	}
	line, i, ok := nextLine(b, i)
	if !ok {
		return 0, partialRequestLine(b[i:])
	}
	if err := h.requestLine(line, req); err != nil {
		return 0, err
	}
	req.Header = req.Header[:0]
	for fields := 0; ; fields++ {
		line, next, ok := nextLine(b, i)
		switch {
		case !ok:
			return 0, ErrIncomplete
		case len(line) == 0:
			return next, nil
		case maxFields > 0 && fields >= maxFields:
			return 0, ErrHeadTooLarge
		}
		name, value, r := parseField(line)
		if r != rOK {
			return 0, reqErr(r)
		}
		if h.field(name, value) {
			req.Header = append(req.Header, httpmsg.Field{Name: str(name), Value: str(value)})
		}
		i = next
	}
}

// skipEmptyLines returns the index after up to maxEmptyLines empty lines
// at the start of b, or -1 when b ends inside them.
func skipEmptyLines(b []byte) (int, reason) {
	i := 0
	for n := 0; ; n++ {
		switch {
		case i == len(b):
			return -1, rOK
		case b[i] == '\n':
			i++
		case b[i] != '\r':
			return i, rOK
		case i+1 == len(b):
			return -1, rOK
		case b[i+1] != '\n':
			return 0, rBareCR
		default:
			i += 2
		}
		if n == maxEmptyLines {
			return 0, rTooManyEmpty
		}
	}
}

// partialRequestLine checks the start of a request line whose end has
// not arrived, so that a client speaking something else (TLS, HTTP/2
// frames) is refused at once rather than after MaxHeaderBytes.
func partialRequestLine(b []byte) error {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		sp = len(b)
	}
	for _, c := range b[:sp] {
		if !tokenTab[c] {
			return reqErr(rMethod)
		}
	}
	return ErrIncomplete
}

// requestLine parses method SP request-target SP HTTP-version (RFC 9112
// §3).
func (h *reqHead) requestLine(line []byte, req *httpmsg.Request) error {
	if bytes.IndexByte(line, '\r') >= 0 {
		return reqErr(rBareCR)
	}
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return reqErr(rRequestLine)
	}
	method, rest := line[:sp], line[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	if sp < 0 {
		return reqErr(rRequestLine)
	}
	target, ver := rest[:sp], rest[sp+1:]
	if !validMethod(method) {
		return reqErr(rMethod)
	}
	major, minor, ok := parseVersion(ver)
	switch {
	case !ok:
		return reqErr(rVersion)
	case string(method) == "PRI" && string(target) == "*" && major == 2 && minor == 0:
		return ErrPreface
	case major != 1:
		return ErrVersion
	case string(method) == "PRI": // only ever the HTTP/2 preface (RFC 9113 §11.6)
		return reqErr(rMethod)
	}
	auth, ok := checkTarget(target, method)
	if !ok {
		return reqErr(rTarget)
	}
	h.http10 = minor == 0
	h.connect = string(method) == "CONNECT"
	h.auth = auth
	req.Method, req.Target = str(method), str(target)
	req.ProtoMajor, req.ProtoMinor = major, minor
	return nil
}

func validMethod(m []byte) bool {
	for _, c := range m {
		if !tokenTab[c] {
			return false
		}
	}
	return len(m) > 0
}

// field records a field the parser reads and reports whether it goes
// into the Header (all but Host).
func (h *reqHead) field(name, v []byte) bool {
	switch k := kindOf(name); k {
	case fHost:
		h.hosts++
		h.host = v
		return false
	case fUpgrade:
		h.upgrade = true
		h.h2c = h.h2c || hasToken(v, "h2c")
	case fExpect:
		h.expectField(v)
	default:
		h.add(k, v)
	}
	return true
}

// expectField reads an Expect list: 100-continue is the only expectation
// (RFC 9110 §10.1.1).
func (h *reqHead) expectField(v []byte) {
	for len(v) > 0 {
		var item []byte
		item, v = nextListItem(v)
		switch {
		case foldEq(item, "100-continue"):
			h.expect = true
		case len(item) > 0:
			h.expectNo = true
		}
	}
}

// finish checks the head as a whole and decides its framing.
func (h *reqHead) finish(req *httpmsg.Request) (Framing, error) {
	if r := h.check(); r != rOK {
		return Framing{}, reqErr(r)
	}
	if h.expectNo {
		return Framing{}, ErrExpectation
	}
	req.Host = str(h.host)
	if len(h.auth) > 0 {
		req.Host = str(h.auth)
	}
	f := Framing{KeepAlive: h.keepAlive(h.http10)}
	switch {
	case h.teCount > 0:
		f.Chunked, f.ContentLength = true, -1
	case h.clCount > 0:
		f.ContentLength = h.cl
	}
	if h.upgrade && !h.http10 { // RFC 9110 §7.8: ignored in HTTP/1.0
		f.H2CUpgrade = h.h2c
		f.Upgrade = !h.h2c
		if h.h2c {
			req.Header = dropH2C(req.Header)
		}
	}
	f.Upgrade = f.Upgrade || h.connect
	f.Expect100 = h.expect && !h.http10 && f.ContentLength != 0
	req.ContentLength = f.ContentLength
	req.Close = !f.KeepAlive
	return f, nil
}

// check applies the rules that need the whole head, in the framing
// guard's order.
func (h *reqHead) check() reason {
	switch {
	case h.teCount > 0 && h.clCount > 0:
		return rBothLengths // RFC 9112 §6.1, §11.2
	case h.clBad:
		return rContentLength
	case h.teCount > 1 || h.teBad:
		return rTransferEncoding
	case h.teCount > 0 && h.http10:
		return rTEHTTP10
	case h.hosts > 1:
		return rManyHosts // RFC 9112 §3.2
	case h.hosts == 0 && !h.http10 && !h.connect:
		return rNoHost
	case len(h.host) > 0 && !ValidAuthority(str(h.host)):
		// An authority, not just its bytes: "[::1" or "a@b" must not
		// reach the upstream, X-Forwarded-Host or Forwarded.
		return rBadHost
	}
	return rOK
}

// dropH2C removes the Upgrade and HTTP2-Settings fields in place, without
// allocating; the Connection options that name them are left to
// httpsyntax.StripH2C.
func dropH2C(hdr httpmsg.Header) httpmsg.Header {
	out := hdr[:0]
	for _, f := range hdr {
		if k := kindOf(f.Name); k != fUpgrade && k != fHTTP2Settings {
			out = append(out, f)
		}
	}
	clear(hdr[len(out):])
	return out
}
