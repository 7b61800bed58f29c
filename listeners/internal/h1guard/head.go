package h1guard

import "bytes"

// state is the position of the scanner in the request grammar. Head states
// come before stBodyFirst.
type state uint8

const (
	stReqStart     state = iota // before a request line
	stMethod                    // method, up to the first SP
	stTarget                    // request-target, up to the second SP
	stProto                     // HTTP-version, up to the line end
	stProtoCR                   // CR seen at the end of the request line
	stFieldStart                // first byte of a field line (or the empty line)
	stFieldStartCR              // CR that begins the empty line
	stName                      // field name, up to the colon
	stValue                     // field value, up to the line end
	stValueCR                   // CR seen at the end of a field line
	stPreface                   // the rest of the HTTP/2 preface after its request line

	stBodyFirst
)

// fieldKind names the header fields the guard reads the value of.
type fieldKind uint8

const (
	fieldOther fieldKind = iota
	fieldContentLength
	fieldTransferEncoding
	fieldUpgrade
)

// head collects what the guard needs from one request head. Every buffer
// is fixed-size: longer values are recorded as too long, never stored.
type head struct {
	skip       uint8 // leading CR/LF Go's server skips (after a POST)
	method     [8]byte
	methodLen  uint8 // saturates at len(method)+1
	targetLen  uint8 // saturates at 2
	targetStar bool
	proto      [8]byte
	protoLen   uint8 // saturates at len(proto)+1
	http10     bool  // version older than HTTP/1.1
	name       [20]byte
	nameLen    uint8 // saturates at len(name)+1
	field      fieldKind
	val        [32]byte
	valLen     uint8
	valOver    bool
	clCount    uint8 // saturating
	clDigits   uint8
	cl         uint64
	clBad      bool
	teCount    uint8 // saturating
	teBad      bool
	upgrade    bool
}

func (h *head) methodIs(m string) bool {
	return int(h.methodLen) == len(m) && string(h.method[:len(m)]) == m
}

// scanHead advances through a request head from p[i] and returns the next
// index to scan.
func (g *Guard) scanHead(p []byte, i int) int {
	switch g.st {
	case stReqStart:
		return g.scanReqStart(p, i)
	case stMethod:
		return g.scanMethod(p, i)
	case stTarget:
		return g.scanTarget(p, i)
	case stProto:
		return g.scanProto(p, i)
	case stProtoCR, stFieldStartCR, stValueCR:
		return g.scanLF(p, i)
	case stFieldStart:
		return g.scanFieldStart(p, i)
	case stName:
		return g.scanName(p, i)
	case stPreface:
		return g.scanPreface(p, i)
	default:
		return g.scanValue(p, i)
	}
}

// prefaceTail is what follows "PRI * HTTP/2.0\r\n" in the HTTP/2 client
// preface (RFC 9113 §3.4).
const prefaceTail = "\r\nSM\r\n\r\n"

// scanPreface checks the preface byte by byte; only a complete preface
// turns the connection over to HTTP/2, so a PRI request line followed by
// anything else cannot leave the rest of the connection unguarded.
func (g *Guard) scanPreface(p []byte, i int) int {
	n := int(g.h.valLen)
	if p[i] != prefaceTail[n] {
		return g.fail(MalformedRequestLine, i)
	}
	if n+1 == len(prefaceTail) {
		g.mode = PassThrough // prior-knowledge h2c (RFC 9113 §3.3)
		return i + 1
	}
	g.h.valLen++
	return i + 1
}

func (g *Guard) scanReqStart(p []byte, i int) int {
	c := p[i]
	if c != '\r' && c != '\n' {
		g.st = stMethod
		return i
	}
	if g.h.skip == 0 {
		return g.fail(MalformedRequestLine, i)
	}
	g.h.skip-- // RFC 9112 §2.2 tolerance, as Go's server after a POST
	return i + 1
}

func (g *Guard) scanMethod(p []byte, i int) int {
	h := &g.h
	for ; i < len(p); i++ {
		switch c := p[i]; c {
		case ' ':
			if h.methodLen == 0 {
				return g.fail(MalformedRequestLine, i)
			}
			g.st = stTarget
			return i + 1
		case '\r', '\n', 0:
			return g.fail(MalformedRequestLine, i)
		default:
			if int(h.methodLen) < len(h.method) {
				h.method[h.methodLen] = c
			}
			if int(h.methodLen) <= len(h.method) {
				h.methodLen++
			}
		}
	}
	return i
}

func (g *Guard) scanTarget(p []byte, i int) int {
	h := &g.h
	for ; i < len(p); i++ {
		switch c := p[i]; c {
		case ' ':
			g.st = stProto
			return i + 1
		case '\r', '\n', 0:
			return g.fail(MalformedRequestLine, i)
		default:
			if h.targetLen < 2 {
				h.targetLen++
				h.targetStar = h.targetLen == 1 && c == '*'
			}
		}
	}
	return i
}

func (g *Guard) scanProto(p []byte, i int) int {
	h := &g.h
	for ; i < len(p); i++ {
		switch c := p[i]; c {
		case '\n':
			return g.endRequestLine(i)
		case '\r':
			g.st = stProtoCR
			return i + 1
		case 0:
			return g.fail(MalformedRequestLine, i)
		default:
			if int(h.protoLen) < len(h.proto) {
				h.proto[h.protoLen] = c
			}
			if int(h.protoLen) <= len(h.proto) {
				h.protoLen++
			}
		}
	}
	return i
}

// scanLF expects the LF that must follow a CR in a head.
func (g *Guard) scanLF(p []byte, i int) int {
	if p[i] != '\n' {
		return g.fail(BareCR, i)
	}
	switch g.st {
	case stProtoCR:
		return g.endRequestLine(i)
	case stFieldStartCR:
		return g.endHead(i)
	default:
		return g.endField(i)
	}
}

// endRequestLine checks the HTTP-version ending at p[i] (Go accepts exactly
// "HTTP/" DIGIT "." DIGIT) and spots the HTTP/2 preface.
func (g *Guard) endRequestLine(i int) int {
	h := &g.h
	v := h.proto[:]
	if h.protoLen != 8 || string(v[:5]) != "HTTP/" || !isDigit(v[5]) || v[6] != '.' || !isDigit(v[7]) {
		return g.fail(MalformedRequestLine, i)
	}
	h.http10 = v[5] < '1' || (v[5] == '1' && v[7] == '0')
	if h.methodIs("PRI") || v[5] != '1' {
		// Only HTTP/1.x requests, and the HTTP/2 preface where allowed.
		if !g.H2C || g.heads != 0 || g.off+int64(i) != 15 || !h.methodIs("PRI") || !h.targetStar || string(v) != "HTTP/2.0" {
			return g.fail(MalformedRequestLine, i)
		}
		g.st, h.valLen = stPreface, 0
		return i + 1
	}
	g.st = stFieldStart
	g.lineStart = i + 1
	return i + 1
}

func (g *Guard) scanFieldStart(p []byte, i int) int {
	switch p[i] {
	case '\n':
		return g.endHead(i)
	case '\r':
		g.st = stFieldStartCR
		return i + 1
	case ' ', '\t':
		return g.fail(ObsFold, i)
	case ':', 0:
		return g.fail(MalformedField, i)
	}
	g.h.nameLen = 0
	g.st = stName
	return i
}

// nameStop marks the bytes that end or break a field name.
var nameStop = [256]bool{':': true, ' ': true, '\t': true, '\r': true, '\n': true, 0: true}

func (g *Guard) scanName(p []byte, i int) int {
	h := &g.h
	for ; i < len(p); i++ {
		c := p[i]
		if nameStop[c] {
			return g.endName(c, i)
		}
		if n := int(h.nameLen); n < len(h.name) {
			h.name[n] = lower(c)
			h.nameLen++
		} else if n == len(h.name) {
			h.nameLen++
		}
	}
	return i
}

func (g *Guard) endName(c byte, i int) int {
	switch c {
	case ':':
		g.startValue()
		return i + 1
	case ' ', '\t':
		return g.fail(SpaceInName, i)
	}
	return g.fail(MalformedField, i)
}

func (g *Guard) startValue() {
	h := &g.h
	name := h.name[:min(int(h.nameLen), len(h.name))]
	switch {
	case int(h.nameLen) > len(h.name):
		h.field = fieldOther
	case string(name) == "content-length":
		h.field = fieldContentLength
	case string(name) == "transfer-encoding":
		h.field = fieldTransferEncoding
	case string(name) == "upgrade":
		h.field = fieldUpgrade
	default:
		h.field = fieldOther
	}
	h.valLen, h.valOver = 0, false
	g.st = stValue
}

// scanValue skips a field value, storing it when the field is one the
// guard reads. A CR must be followed by LF; NUL is refused.
func (g *Guard) scanValue(p []byte, i int) int {
	rest := p[i:]
	seg := rest
	lf := bytes.IndexByte(rest, '\n')
	if lf >= 0 {
		seg = rest[:lf]
	}
	if k := bytes.IndexByte(seg, 0); k >= 0 {
		return g.fail(BadByte, i+k)
	}
	cr := bytes.IndexByte(seg, '\r')
	if cr >= 0 && cr < len(seg)-1 {
		return g.fail(BareCR, i+cr+1)
	}
	val := seg
	if cr >= 0 {
		val = seg[:cr]
	}
	if g.h.field != fieldOther {
		g.h.store(val)
	}
	switch {
	case cr >= 0 && lf < 0: // CR ends the buffer; its LF comes next
		g.st = stValueCR
		return len(p)
	case lf < 0:
		return len(p)
	}
	return g.endField(i + lf)
}

// store appends b to the stored value, skipping leading OWS.
func (h *head) store(b []byte) {
	if h.valLen == 0 {
		b = bytes.TrimLeft(b, " \t")
	}
	if len(b) > len(h.val)-int(h.valLen) {
		h.valOver = true
		return
	}
	h.valLen += uint8(copy(h.val[h.valLen:], b))
}

// endField records the field whose line ends with the LF at p[i].
func (g *Guard) endField(i int) int {
	h := &g.h
	g.st = stFieldStart
	g.lineStart = i + 1
	if h.field == fieldOther {
		return i + 1
	}
	v := bytes.TrimRight(h.val[:h.valLen], " \t")
	switch h.field {
	case fieldContentLength:
		h.addContentLength(v)
	case fieldTransferEncoding:
		h.teCount = satInc(h.teCount)
		h.teBad = h.teBad || h.valOver || !equalFoldChunked(v)
	case fieldUpgrade:
		h.upgrade = true
	}
	return i + 1
}

// addContentLength checks one Content-Length value: 1 to 19 digits, at most
// 2^63-1 (as Go's strconv.ParseUint(v, 10, 63)), equal to any earlier one.
func (h *head) addContentLength(v []byte) {
	h.clCount = satInc(h.clCount)
	if h.valOver || len(v) == 0 || len(v) > 19 {
		h.clBad = true
		return
	}
	var n uint64
	for _, c := range v {
		if !isDigit(c) {
			h.clBad = true
			return
		}
		n = n*10 + uint64(c-'0')
	}
	if n > 1<<63-1 || (h.clCount > 1 && (h.cl != n || int(h.clDigits) != len(v))) {
		h.clBad = true
		return
	}
	h.cl, h.clDigits = n, uint8(len(v))
}

// endHead decides the framing of the head whose empty line ends at p[i].
func (g *Guard) endHead(i int) int {
	h := &g.h
	switch {
	case h.teCount > 0 && h.clCount > 0:
		return g.fail(BothLengths, i)
	case h.clBad:
		return g.fail(BadContentLength, i)
	case h.teCount > 1 || h.teBad:
		return g.fail(BadTransferEncoding, i)
	case h.teCount == 1 && h.http10:
		return g.fail(TransferEncodingHTTP10, i)
	}
	g.heads++
	g.headEnd = g.lineStart
	// OPTIONS * cannot upgrade, and Go's server answers it itself, out of
	// reach of the handler that closes upgrade connections: keep parsing.
	if (h.upgrade && !(h.targetStar && h.methodIs("OPTIONS"))) || h.methodIs("CONNECT") {
		g.mode, g.upg = PassThrough, true
		return i + 1
	}
	post := h.methodIs("POST")
	switch {
	case h.teCount == 1:
		g.st = stChunkSize
	case h.cl > 0:
		g.st, g.b.remain = stBodyCL, h.cl
	default:
		g.st = stReqStart
	}
	g.h = head{}
	if post {
		g.h.skip = 4
	}
	if g.st == stReqStart {
		g.reqStart = i + 1
	}
	return i + 1
}
