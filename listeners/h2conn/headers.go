package h2conn

import (
	"encoding/binary"
	"errors"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// headerBlock is the header block being read (HEADERS, then
// CONTINUATION until END_HEADERS). Its fields are decoded as they come,
// straight into the stream's request.
type headerBlock struct {
	open                                  bool
	stream                                uint32
	start                                 time.Time
	endStream                             bool
	st                                    *stream // the stream the block opens, or whose trailers it is; nil: decoded and dropped
	trailers                              bool
	refused                               uint32 // a stream refused at its HEADERS (REFUSED_STREAM); 0: none
	conts                                 int
	bytes                                 int
	list                                  int    // decoded size, as RFC 9113 §6.5.2 counts it
	tooLarge                              bool   // over MaxHeaderBytes: 431
	fatal                                 error  // over the hard limit: the connection ends
	malformed                             string // the refusal reason of a malformed request (a stream error)
	bad400                                string // the refusal reason of a request answered 400
	regular                               bool   // a regular field came
	method, scheme, path, authority, host bool
	cookies                               int
	hasProtocol                           bool   // :protocol came (extended CONNECT, RFC 8441 §4)
	protocol                              string // its value
}

// maxContinuations caps a block's CONTINUATION frames: what the hard
// header limit needs at 1 KiB a frame, plus 8.
func (c *conn) maxContinuations() int { return HardHeaderFactor*c.cfg.MaxHeaderBytes/1024 + 8 }

func (c *conn) onHeaders(fh frameHeader, p []byte) error {
	id := fh.stream
	if id == 0 || id%2 == 0 {
		return errProtocol("HEADERS on stream 0 or a server stream")
	}
	frag, err := headersFragment(fh, p)
	if err != nil {
		return err
	}
	hb := &c.hb
	*hb = headerBlock{open: true, stream: id, start: time.Now(), endStream: fh.flags&flagEndStream != 0, bytes: len(frag)}
	c.mu.Lock()
	st := c.streams[id]
	switch {
	case st != nil && st.peerReset:
		c.mu.Unlock()
		return &connError{code: codeStreamClosed, kind: httpmsg.ReasonProtocolError, why: "HEADERS on a stream the client reset"}
	case st != nil && st.reset, st == nil && id <= c.maxStream && c.recentlyReset(id):
		// a stream this side reset: the block is decoded and dropped
	case st != nil && st.remoteClosed:
		c.mu.Unlock()
		return &connError{code: codeStreamClosed, kind: httpmsg.ReasonProtocolError, why: "HEADERS on a half-closed stream"}
	case st != nil:
		hb.st, hb.trailers = st, true
	case id <= c.maxStream:
		c.mu.Unlock()
		return &connError{code: codeStreamClosed, kind: httpmsg.ReasonProtocolError, why: "HEADERS on a closed stream"}
	default:
		c.maxStream = id
		hb.st = c.admitLocked(id)
	}
	c.mu.Unlock()
	if len(p) >= 5 && fh.flags&flagPriority != 0 && dependsOnSelf(fh, p) {
		hb.malformed = httpmsg.ReasonProtocolError
	}
	if err := c.decode(frag); err != nil {
		return err
	}
	if fh.flags&flagEndHeaders != 0 {
		return c.endBlock()
	}
	return nil
}

// headersFragment returns a HEADERS frame's header block fragment.
func headersFragment(fh frameHeader, p []byte) ([]byte, error) {
	pad := 0
	if fh.flags&flagPadded != 0 {
		if len(p) == 0 {
			return nil, errProtocol("HEADERS too short for its padding")
		}
		pad, p = int(p[0]), p[1:]
	}
	if fh.flags&flagPriority != 0 {
		if len(p) < 5 {
			return nil, errProtocol("HEADERS too short for its priority")
		}
		p = p[5:]
	}
	if pad > len(p) {
		return nil, errProtocol("HEADERS padding longer than the frame")
	}
	return p[:len(p)-pad], nil
}

func dependsOnSelf(fh frameHeader, p []byte) bool {
	if fh.flags&flagPadded != 0 {
		p = p[1:]
	}
	return len(p) >= 4 && binary.BigEndian.Uint32(p)&0x7fffffff == fh.stream
}

// admitLocked makes the stream a new HEADERS opens, or returns nil when
// it is not served: after GOAWAY, or past the stream limits (refused
// once its block is decoded). c.mu is held.
func (c *conn) admitLocked(id uint32) *stream {
	if c.goingAway {
		return nil
	}
	if c.open >= c.cfg.MaxConcurrentStreams || c.handlers >= 2*c.cfg.MaxConcurrentStreams {
		c.hb.refused = id
		return nil
	}
	return newStream(c, id)
}

func (c *conn) onContinuation(fh frameHeader, p []byte) error {
	hb := &c.hb
	if !hb.open {
		return errProtocol("CONTINUATION outside a header block")
	}
	hb.conts++
	hb.bytes += len(p)
	if hb.conts > c.maxContinuations() {
		return &connError{code: codeCalm, kind: httpmsg.ReasonContinuationFlood, why: "header block in too many CONTINUATION frames"}
	}
	if hb.bytes > 2*HardHeaderFactor*c.cfg.MaxHeaderBytes {
		return &connError{code: codeCalm, kind: httpmsg.ReasonHeadTooLarge, why: "header block too large"}
	}
	if err := c.decode(p); err != nil {
		return err
	}
	if fh.flags&flagEndHeaders != 0 {
		return c.endBlock()
	}
	return nil
}

// decode feeds a fragment to the connection's HPACK decoder, whose emit
// fills the request.
func (c *conn) decode(frag []byte) error {
	if _, err := c.dec.Write(frag); err != nil {
		return decodeError(err)
	}
	return c.hb.fatal
}

func decodeError(err error) error {
	if errors.Is(err, hpack.ErrStringLength) {
		return &connError{code: codeCalm, kind: httpmsg.ReasonHeadTooLarge, why: "header field longer than the header list limit"}
	}
	return &connError{code: codeCompression, kind: httpmsg.ReasonCompressionError, why: "header block: " + err.Error()}
}

// emit is the HPACK decoder's: it checks one field (RFC 9113 §8.2,
// §8.3) and adds it to the stream's request.
func (c *conn) emit(f hpack.HeaderField) {
	hb := &c.hb
	if hb.fatal != nil {
		return
	}
	hb.list += len(f.Name) + len(f.Value) + 32
	if hb.list > HardHeaderFactor*c.cfg.MaxHeaderBytes {
		hb.fatal = &connError{code: codeCalm, kind: httpmsg.ReasonHeadTooLarge, why: "header list larger than the limit"}
		return
	}
	if hb.list > c.cfg.MaxHeaderBytes {
		hb.tooLarge = true
	}
	if hb.st == nil || hb.malformed != "" {
		return
	}
	if len(f.Name) > 0 && f.Name[0] == ':' {
		hb.malformed = c.pseudo(f)
		return
	}
	hb.regular = true
	if reason := checkRegular(f); reason != "" {
		hb.malformed = reason
		return
	}
	if hb.tooLarge {
		return // answered 431: the fields are not kept
	}
	st := hb.st
	if hb.trailers {
		st.trailer = append(st.trailer, httpmsg.Field{Name: f.Name, Value: f.Value})
		return
	}
	switch f.Name {
	case "host":
		if hb.host {
			hb.bad400 = httpmsg.ReasonInvalidHost
		}
		hb.host = true
		if st.req.Host == "" {
			st.req.Host = f.Value
		} else if st.req.Host != f.Value {
			hb.bad400 = httpmsg.ReasonInvalidHost
		}
		return
	case "content-length":
		if st.cl >= 0 || !digits(f.Value) {
			hb.bad400 = httpmsg.ReasonInvalidContentLength
		} else {
			st.cl = parseDigits(f.Value)
		}
	case "cookie":
		hb.cookies++
	}
	st.fields = append(st.fields, httpmsg.Field{Name: f.Name, Value: f.Value})
}

// pseudo takes a pseudo-header field; it returns the refusal reason of
// a malformed one, or "".
func (c *conn) pseudo(f hpack.HeaderField) string {
	hb := &c.hb
	if hb.regular || hb.trailers {
		return httpmsg.ReasonMalformedRequest
	}
	st := hb.st
	seen := func(b *bool) bool { dup := *b; *b = true; return dup }
	switch f.Name {
	case ":method":
		if seen(&hb.method) {
			return httpmsg.ReasonMalformedRequest
		}
		st.req.Method = f.Value
	case ":scheme":
		if seen(&hb.scheme) {
			return httpmsg.ReasonMalformedRequest
		}
	case ":path":
		if seen(&hb.path) || f.Value == "" {
			return httpmsg.ReasonMalformedRequest
		}
		st.req.Target = f.Value
	case ":authority":
		if seen(&hb.authority) {
			return httpmsg.ReasonMalformedRequest
		}
		if hb.host && st.req.Host != f.Value {
			hb.bad400 = httpmsg.ReasonInvalidHost
		}
		st.req.Host = f.Value
	case ":protocol":
		if seen(&hb.hasProtocol) {
			return httpmsg.ReasonMalformedRequest
		}
		hb.protocol = f.Value
	default:
		return httpmsg.ReasonMalformedRequest
	}
	return ""
}

// checkRegular refuses the regular fields that make a request malformed
// (RFC 9113 §8.2.1, §8.2.2).
func checkRegular(f hpack.HeaderField) string {
	if !validWireName(f.Name) || !httpguts.ValidHeaderFieldValue(f.Value) {
		return httpmsg.ReasonMalformedRequest
	}
	switch f.Name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		return httpmsg.ReasonConnectionHeader
	case "te":
		if f.Value != "trailers" {
			return httpmsg.ReasonConnectionHeader
		}
	}
	return ""
}

// validWireName reports a field name HTTP/2 allows on the wire: a token
// without upper-case letters.
func validWireName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if b >= 0x80 || !httpguts.IsTokenRune(rune(b)) || ('A' <= b && b <= 'Z') {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func parseDigits(s string) int64 {
	var n int64
	for i := 0; i < len(s); i++ {
		n = n*10 + int64(s[i]-'0')
	}
	return n
}

// endBlock acts on a complete header block: a request starts, trailers
// end a body, or a stream is refused.
func (c *conn) endBlock() error {
	hb := &c.hb
	hb.open = false
	c.blockDone()
	if err := c.dec.Close(); err != nil {
		return decodeError(err)
	}
	if hb.fatal != nil {
		return hb.fatal
	}
	switch {
	case hb.refused != 0:
		c.refuse(0, httpmsg.ReasonTooManyStreams)
		c.mu.Lock()
		c.out = appendRST(c.out, hb.refused, codeRefusedStream)
		c.noteReset(hb.refused)
		c.wakeWriterLocked()
		c.mu.Unlock()
		return nil
	case hb.st == nil:
		return nil // after GOAWAY: not served
	case hb.trailers:
		return c.endTrailers()
	}
	return c.startRequest()
}

// endTrailers ends a body with its trailers.
func (c *conn) endTrailers() error {
	hb := &c.hb
	c.mu.Lock()
	defer c.mu.Unlock()
	st := hb.st
	if st.reset {
		return nil
	}
	if !hb.endStream || hb.malformed != "" {
		kind := hb.malformed
		if kind == "" {
			kind = httpmsg.ReasonMalformedRequest
		}
		c.resetLocked(st, codeProtocol, kind)
		return nil
	}
	return c.endRemoteLocked(st)
}

// startRequest checks a request's head and starts its handler, or
// refuses it.
func (c *conn) startRequest() error {
	hb := &c.hb
	st := hb.st
	status := 0
	if hb.malformed == "" && !hb.tooLarge && hb.hasProtocol {
		status, hb.malformed = c.extendedConnect() // websocket.go
	}
	if hb.malformed == "" && !hb.tooLarge && !hb.scheme && st.req.Method != "CONNECT" {
		hb.malformed = httpmsg.ReasonMalformedRequest // :scheme missing
	}
	if hb.malformed == "" && !hb.tooLarge && (!hb.method || (st.req.Method != "CONNECT" && !hb.path)) {
		hb.malformed = httpmsg.ReasonMalformedRequest
	}
	if hb.malformed == "" && hb.endStream && st.cl > 0 {
		hb.malformed = httpmsg.ReasonInvalidContentLength
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.streams[st.id] = st
	c.open++
	c.busyLocked()
	st.remoteClosed = hb.endStream
	switch {
	case hb.malformed != "":
		c.resetLocked(st, codeProtocol, hb.malformed)
		c.removeLocked(st)
		return nil
	case hb.tooLarge:
		c.answerLocked(st, 431, httpmsg.ReasonHeadTooLarge)
		return nil
	case hb.bad400 == "" && !httpsyntax.ValidToken(st.req.Method):
		hb.bad400 = httpmsg.ReasonInvalidMethod
	case hb.bad400 == "" && st.req.Host != "" && !http1.ValidAuthority(st.req.Host):
		hb.bad400 = httpmsg.ReasonInvalidHost
	}
	if hb.bad400 != "" {
		c.answerLocked(st, 400, hb.bad400)
		return nil
	}
	if status != 0 {
		c.answerPlainLocked(st, status)
		return nil
	}
	if hb.cookies > 1 {
		st.fields = joinCookies(st.fields)
	}
	st.prepare(hb.endStream)
	c.handlers++
	c.s.dispatch(st)
	return nil
}

// joinCookies makes the cookie fields one, as RFC 9113 §8.2.3 asks
// before a request goes on as HTTP/1.1.
func joinCookies(h httpmsg.Header) httpmsg.Header {
	var parts []string
	out := h[:0]
	at := -1
	for _, f := range h {
		if f.Name == "cookie" {
			parts = append(parts, f.Value)
			if at >= 0 {
				continue
			}
			at = len(out)
		}
		out = append(out, f)
	}
	out[at].Value = strings.Join(parts, "; ")
	return out
}
