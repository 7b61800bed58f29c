package h1guard

import "fmt"

// Reason says which framing rule a request broke.
type Reason uint8

// The reasons for refusing a request. The comments cite RFC 9112.
const (
	_                      Reason = iota
	BothLengths                   // Content-Length and Transfer-Encoding (§6.1, §11.2)
	BadContentLength              // empty, non-digit, comma list, too large or differing values (§6.3)
	BadTransferEncoding           // anything but one field "chunked" (§6.1)
	TransferEncodingHTTP10        // Transfer-Encoding on an HTTP/1.0 request (§6.1)
	ObsFold                       // a line folded with leading SP or HT (§5.2)
	SpaceInName                   // whitespace in a field name or before its colon (§5.1)
	MalformedRequestLine          // request line without method, target and HTTP/x.y (§3)
	MalformedField                // field line without a name and colon (§5)
	BareCR                        // CR not followed by LF (§2.2)
	BadByte                       // NUL in a head line (§5.5)
	BadChunkSize                  // chunk-size line other than HEXDIG+ [";" ext] CRLF (§7.1)
	ChunkTooLarge                 // chunk size of more than 16 hex digits
	BadChunkData                  // chunk data not followed by exactly CRLF (§7.1)
	BadTrailer                    // malformed trailer section (§7.1.2)
)

var reasonText = [...]string{
	BothLengths:            "both Content-Length and Transfer-Encoding",
	BadContentLength:       "invalid Content-Length",
	BadTransferEncoding:    "unsupported Transfer-Encoding",
	TransferEncodingHTTP10: "Transfer-Encoding on HTTP/1.0",
	ObsFold:                "obsolete line folding",
	SpaceInName:            "whitespace in field name",
	MalformedRequestLine:   "malformed request line",
	MalformedField:         "malformed field line",
	BareCR:                 "bare CR",
	BadByte:                "NUL in head",
	BadChunkSize:           "malformed chunk-size line",
	ChunkTooLarge:          "chunk size too large",
	BadChunkData:           "chunk data not followed by CRLF",
	BadTrailer:             "malformed trailer section",
}

func (r Reason) String() string {
	if int(r) < len(reasonText) && reasonText[r] != "" {
		return reasonText[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Error is a framing violation: its rule and the stream offset of the byte
// at which the guard knew.
type Error struct {
	Reason Reason
	Offset int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("http/1 framing: %s at byte %d", e.Reason, e.Offset)
}

// fail poisons the guard for a violation revealed by p[i] and returns i.
// What the server still sees is chosen so that no handler runs for a head
// the server has not finished: a head violation, or a body violation in the
// buffer where its head ended, cuts the buffer at the start of that request
// (or at 0) and appends the refused line; a body violation later in a body
// a handler is already reading cuts at p[i] and ends the stream there, so
// the server's body reader fails with an unexpected EOF.
func (g *Guard) fail(r Reason, i int) int {
	g.mode = Poisoned
	g.err = Error{Reason: r, Offset: g.off + int64(i)}
	g.injected = 0
	switch {
	case g.st < stBodyFirst || g.reqStart >= 0:
		g.cut = max(g.reqStart, 0)
	case g.headEnd >= 0:
		g.cut = g.headEnd
	default:
		g.cut, g.injected = i, len(inject)
	}
	return i
}
