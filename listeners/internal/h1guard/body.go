package h1guard

// Body states, after stBodyFirst.
const (
	stBodyCL         state = iota + stBodyFirst // Content-Length bytes
	stChunkSize                                 // first hex digit of a chunk size
	stChunkSizeMore                             // further hex digits
	stChunkExt                                  // chunk extension, up to CR
	stChunkSizeCR                               // LF after the chunk-size line
	stChunkData                                 // chunk data
	stChunkDataCR                               // CR after chunk data
	stChunkDataLF                               // LF after chunk data
	stTrailerStart                              // first byte of a trailer line
	stTrailerEndLF                              // LF of the final CRLF
	stTrailerName                               // trailer field name
	stTrailerValue                              // trailer field value
	stTrailerValueLF                            // LF ending a trailer line
)

// maxChunkDigits is the most hex digits Go's chunked reader accepts.
const maxChunkDigits = 16

// body is the framing state of a request body.
type body struct {
	remain uint64 // bytes left in the body or the chunk
	digits uint8  // hex digits of the chunk size so far
}

// scanBody advances through a request body from p[i]. Chunked framing is
// RFC 9112 §7.1 with CRLF line ends only: chunk-size [ ";" ext ] CRLF.
func (g *Guard) scanBody(p []byte, i int) int {
	switch g.st {
	case stBodyCL, stChunkData:
		return g.skipData(p, i)
	case stChunkSize, stChunkSizeMore:
		return g.scanChunkSize(p, i)
	case stChunkExt:
		return g.scanChunkExt(p, i)
	case stTrailerName:
		return g.scanTrailerName(p, i)
	case stTrailerValue:
		return g.scanTrailerValue(p, i)
	}
	return g.scanBodyByte(p, i)
}

func (g *Guard) skipData(p []byte, i int) int {
	n := uint64(len(p) - i)
	if n < g.b.remain {
		g.b.remain -= n
		return len(p)
	}
	i += int(g.b.remain)
	g.b.remain = 0
	if g.st == stBodyCL {
		return g.endRequest(i)
	}
	g.st = stChunkDataCR
	return i
}

func (g *Guard) scanChunkSize(p []byte, i int) int {
	for ; i < len(p); i++ {
		c := p[i]
		v, ok := unhex(c)
		switch {
		case ok && g.st == stChunkSize:
			g.b.remain, g.b.digits, g.st = uint64(v), 1, stChunkSizeMore
		case ok:
			if g.b.digits == maxChunkDigits {
				return g.fail(ChunkTooLarge, i)
			}
			g.b.remain = g.b.remain<<4 | uint64(v)
			g.b.digits++
		case g.st == stChunkSize:
			return g.fail(BadChunkSize, i)
		case c == ';':
			g.st = stChunkExt
			return i + 1
		case c == '\r':
			g.st = stChunkSizeCR
			return i + 1
		default:
			return g.fail(BadChunkSize, i)
		}
	}
	return i
}

// scanChunkExt skips a chunk extension: no control bytes but HT.
func (g *Guard) scanChunkExt(p []byte, i int) int {
	for ; i < len(p); i++ {
		c := p[i]
		if c == '\r' {
			g.st = stChunkSizeCR
			return i + 1
		}
		if (c < ' ' && c != '\t') || c == 0x7f {
			return g.fail(BadChunkSize, i)
		}
	}
	return i
}

// scanBodyByte handles the one-byte states of chunked framing.
func (g *Guard) scanBodyByte(p []byte, i int) int {
	c := p[i]
	switch g.st {
	case stChunkSizeCR:
		if c != '\n' {
			return g.fail(BadChunkSize, i)
		}
		g.st = stChunkData
		if g.b.remain == 0 {
			g.st = stTrailerStart
		}
	case stChunkDataCR, stChunkDataLF:
		if c != "\r\n"[g.st-stChunkDataCR] {
			return g.fail(BadChunkData, i)
		}
		g.st++
		if g.st > stChunkDataLF {
			g.st = stChunkSize
		}
	case stTrailerEndLF:
		if c != '\n' {
			return g.fail(BadTrailer, i)
		}
		return g.endRequest(i + 1)
	case stTrailerValueLF:
		if c != '\n' {
			return g.fail(BareCR, i)
		}
		g.st = stTrailerStart
	default: // stTrailerStart
		return g.scanTrailerStart(c, i)
	}
	return i + 1
}

func (g *Guard) scanTrailerStart(c byte, i int) int {
	switch c {
	case '\r':
		g.st = stTrailerEndLF
		return i + 1
	case ' ', '\t':
		return g.fail(ObsFold, i)
	case ':', '\n', 0:
		return g.fail(BadTrailer, i)
	}
	g.st = stTrailerName
	return i
}

func (g *Guard) scanTrailerName(p []byte, i int) int {
	for ; i < len(p); i++ {
		switch p[i] {
		case ':':
			g.st = stTrailerValue
			return i + 1
		case ' ', '\t':
			return g.fail(SpaceInName, i)
		case '\r', '\n', 0:
			return g.fail(BadTrailer, i)
		}
	}
	return i
}

func (g *Guard) scanTrailerValue(p []byte, i int) int {
	for ; i < len(p); i++ {
		switch p[i] {
		case '\r':
			g.st = stTrailerValueLF
			return i + 1
		case '\n':
			return g.fail(BadTrailer, i)
		case 0:
			return g.fail(BadByte, i)
		}
	}
	return i
}

// endRequest marks p[i] as the first byte of the next request.
func (g *Guard) endRequest(i int) int {
	g.st = stReqStart
	g.reqStart = i
	g.headEnd = -1
	return i
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
