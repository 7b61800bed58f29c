package h2guard

import (
	"errors"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// input parses the client's frames as they are read: the 9-byte headers
// are gathered (across reads if need be), payloads are skipped, except
// header block fragments, which go through the mirror HPACK decoder.
type input struct {
	g    *Conn
	skip int // preface bytes still to pass

	hdr  [9]byte
	nhdr int

	// The current frame.
	typ, flags byte
	stream     uint32
	length     uint32
	off        uint32 // payload bytes seen
	fragStart  uint32 // header block fragment bounds in the payload
	fragEnd    uint32

	// The open header block.
	blockOpen   bool
	blockStream uint32
	conts       int
	blockBytes  int
	listBytes   int  // decoded size, as RFC 9113 §6.5.2 counts it
	deadline    bool // the read deadline is armed for it
	sawRegular  bool // a field other than a pseudo-header came
	malformed   bool // a field the server resets the stream for came

	lastStream uint32 // highest stream a header block opened

	ctl      int // control frames in the window
	ctlStart time.Time

	dec *hpack.Decoder
	bad *Violation // set by the decoder's emit function
}

// scan checks p, the bytes one Read returned. On a violation it returns
// how many bytes of p may still go to the server (those before the
// offending frame) and the violation.
func (in *input) scan(p []byte) (int, *Violation) {
	start := 0 // where the current frame began in p (0: before p)
	for i := 0; i < len(p); {
		if in.skip > 0 {
			k := min(in.skip, len(p)-i)
			in.skip -= k
			i += k
			continue
		}
		if in.off == in.length && in.nhdr < 9 {
			if in.nhdr == 0 {
				start = i
			}
			k := copy(in.hdr[in.nhdr:], p[i:])
			in.nhdr += k
			i += k
			if in.nhdr < 9 {
				break
			}
			if v := in.header(); v != nil {
				return start, v
			}
			if in.length == 0 {
				if v := in.frameEnd(); v != nil {
					return start, v
				}
			}
			continue
		}
		k := int(min(uint32(len(p)-i), in.length-in.off))
		if in.typ == frameSettings && in.off == 0 && uint32(k) == in.length && in.flags&flagAck == 0 {
			dedupeSettings(p[i : i+k])
		}
		if in.typ == frameHeaders || in.typ == frameContinuation {
			if v := in.fragment(p[i : i+k]); v != nil {
				return start, v
			}
		}
		i += k
		in.off += uint32(k)
		if in.off == in.length {
			if v := in.frameEnd(); v != nil {
				return start, v
			}
		}
	}
	if in.blockOpen && !in.deadline && in.g.cfg.ReadHeaderTimeout > 0 {
		// Armed only for a block that outlives one read: the common
		// request costs no deadline calls.
		in.deadline = true
		_ = in.g.Conn.SetReadDeadline(time.Now().Add(in.g.cfg.ReadHeaderTimeout))
	}
	return len(p), nil
}

// header checks a frame header once its 9 bytes are in.
func (in *input) header() *Violation {
	h := &in.hdr
	in.length = uint32(h[0])<<16 | uint32(h[1])<<8 | uint32(h[2])
	in.typ, in.flags = h[3], h[4]
	in.stream = (uint32(h[5])<<24 | uint32(h[6])<<16 | uint32(h[7])<<8 | uint32(h[8])) & 0x7fffffff
	in.off = 0
	if in.length > in.g.cfg.MaxFrameSize {
		return &Violation{Code: codeFrameSize, Kind: httpmsg.ReasonFrameTooLarge, Reason: "frame larger than SETTINGS_MAX_FRAME_SIZE"}
	}
	if in.blockOpen && (in.typ != frameContinuation || in.stream != in.blockStream) {
		return &Violation{Code: codeProtocol, Kind: httpmsg.ReasonProtocolError, Reason: "frame inside a header block"}
	}
	switch in.typ {
	case frameHeaders:
		return in.openBlock()
	case frameContinuation:
		if !in.blockOpen {
			return &Violation{Code: codeProtocol, Kind: httpmsg.ReasonProtocolError, Reason: "CONTINUATION outside a header block"}
		}
		in.conts++
		in.blockBytes += int(in.length)
		in.fragStart, in.fragEnd = 0, in.length
		if in.conts > in.g.cfg.MaxContinuations {
			return &Violation{Code: codeCalm, Kind: httpmsg.ReasonContinuationFlood, Reason: "header block in too many CONTINUATION frames"}
		}
		if in.blockBytes > 2*in.g.cfg.MaxHeaderBytes {
			return &Violation{Code: codeCalm, Kind: httpmsg.ReasonHeadTooLarge, Reason: "header block too large"}
		}
	case framePing:
		if in.flags&flagAck == 0 && !in.g.served.Swap(false) {
			return in.control()
		}
	case frameSettings:
		if in.flags&flagAck == 0 {
			return in.control()
		}
	case frameRSTStream, framePriority:
		return in.control()
	case frameData:
		if in.length == 0 && in.flags&0x1 == 0 {
			return in.control() // an empty DATA frame carries nothing
		}
	case framePushPromise, frameGoAway, frameWindowUpdate:
	default:
		return in.control() // unknown types are ignored by the server
	}
	return nil
}

// openBlock starts a header block at a HEADERS frame.
func (in *input) openBlock() *Violation {
	if in.stream > in.lastStream {
		in.lastStream = in.stream
	}
	in.blockOpen, in.blockStream, in.conts, in.blockBytes, in.listBytes = true, in.stream, 0, int(in.length), 0
	in.sawRegular, in.malformed = false, false
	in.fragStart, in.fragEnd = 0, in.length
	if in.flags&flagPriority != 0 {
		in.fragStart += 5
	}
	if in.flags&flagPadded != 0 {
		in.fragStart++ // fragEnd is known once the pad length is read
	}
	if in.fragStart > in.length {
		return &Violation{Code: codeProtocol, Kind: httpmsg.ReasonProtocolError, Reason: "HEADERS frame too short for its flags"}
	}
	if in.dec == nil {
		in.dec = newDecoder(in.g.cfg, in.check)
	}
	return nil
}

// fragment feeds the header block bytes of b (the payload bytes from
// in.off on) to the mirror decoder.
func (in *input) fragment(b []byte) *Violation {
	off := in.off
	if in.typ == frameHeaders && in.flags&flagPadded != 0 && off == 0 && len(b) > 0 {
		pad := uint32(b[0])
		if pad > in.length-in.fragStart {
			return &Violation{Code: codeProtocol, Kind: httpmsg.ReasonProtocolError, Reason: "padding longer than the HEADERS frame"}
		}
		in.fragEnd = in.length - pad
	}
	lo, hi := max(in.fragStart, off), min(in.fragEnd, off+uint32(len(b)))
	if lo >= hi {
		return nil
	}
	if _, err := in.dec.Write(b[lo-off : hi-off]); err != nil {
		return decodeViolation(err)
	}
	return in.bad
}

// frameEnd runs once a frame's payload is through.
func (in *input) frameEnd() *Violation {
	in.nhdr = 0
	if !in.blockOpen || in.flags&flagEndHeaders == 0 || (in.typ != frameHeaders && in.typ != frameContinuation) {
		return nil
	}
	in.blockOpen = false
	if in.deadline {
		in.deadline = false
		_ = in.g.Conn.SetReadDeadline(time.Time{})
	}
	if err := in.dec.Close(); err != nil {
		return decodeViolation(err)
	}
	if in.bad == nil && in.malformed && in.g.cfg.ReportStream != nil {
		in.g.cfg.ReportStream(in.g.Conn.RemoteAddr(), malformedBlock)
	}
	return in.bad
}

// malformedBlock is what ReportStream is told of a header block with a
// field the server resets the stream for.
var malformedBlock = &Violation{Code: codeProtocol, Kind: httpmsg.ReasonMalformedRequest, Reason: "invalid header field"}

// decodeViolation is the violation of a header block the mirror decoder
// refused: a string over MaxHeaderBytes is a block too large (the
// client's fields, not its compression, are at fault), anything else a
// COMPRESSION_ERROR.
func decodeViolation(err error) *Violation {
	if errors.Is(err, hpack.ErrStringLength) {
		return &Violation{Code: codeCalm, Kind: httpmsg.ReasonHeadTooLarge, Reason: "header field longer than the header list limit"}
	}
	return &Violation{Code: codeCompression, Kind: httpmsg.ReasonCompressionError, Reason: "header block: " + err.Error()}
}

// control counts a control frame against the per-second limit. A window
// opens at its first frame: the connection's first control frame, then
// the first one past the limit once the window is over a second old.
func (in *input) control() *Violation {
	in.ctl++
	if in.ctl == 1 {
		// Only ever the connection's first: a window that ends opens
		// the next with ctl at 1.
		in.ctlStart = time.Now()
	}
	if in.ctl <= in.g.cfg.MaxControlPerSecond {
		return nil
	}
	now := time.Now()
	if now.Sub(in.ctlStart) < time.Second {
		return &Violation{Code: codeCalm, Kind: httpmsg.ReasonControlFrameFlood, Reason: "control frame flood"}
	}
	in.ctl, in.ctlStart = 1, now
	return nil
}

// check is the mirror decoder's emit function: it refuses the fields
// that make an HTTP/2 request malformed (RFC 9113 §8.2.2).
func (in *input) check(f hpack.HeaderField) {
	if in.bad != nil {
		return
	}
	if in.listBytes += len(f.Name) + len(f.Value) + 32; in.listBytes > in.g.cfg.MaxHeaderBytes {
		// Past the server's own limit x/net would answer 431 itself,
		// unseen by edgeway, or end the connection: the guard ends it
		// first, and reports it.
		in.bad = &Violation{Code: codeCalm, Kind: httpmsg.ReasonHeadTooLarge, Reason: "header list larger than the limit"}
		return
	}
	if !in.malformed {
		// x/net's framer (readMetaFrame) resets the stream for these,
		// and stops decoding the block's fields: so does this.
		pseudo := len(f.Name) > 0 && f.Name[0] == ':'
		in.malformed = !httpguts.ValidHeaderFieldValue(f.Value) || (pseudo && in.sawRegular) || (!pseudo && !validWireName(f.Name))
		in.sawRegular = in.sawRegular || !pseudo
	}
	switch f.Name {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
		in.bad = &Violation{Code: codeProtocol, Kind: httpmsg.ReasonConnectionHeader, Reason: "connection-specific header field " + f.Name}
	case "te":
		if f.Value != "trailers" {
			in.bad = &Violation{Code: codeProtocol, Kind: httpmsg.ReasonConnectionHeader, Reason: "te other than trailers"}
		}
	}
}

// validWireName reports whether name is a field name HTTP/2 allows on
// the wire: a token without upper-case letters (RFC 9113 §8.2.1).
func validWireName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !httpguts.IsTokenRune(r) || ('A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// maxSettingsPayload is the largest SETTINGS payload the guard rewrites.
const maxSettingsPayload = 6 * 16

// dedupeSettings rewrites, in place, every setting of a SETTINGS payload
// that a later entry of the same frame repeats into an unknown
// identifier, which the server ignores (RFC 9113 §6.5.2). RFC 9113 §6.5.3
// has the values processed in order, so the last one wins; x/net instead
// refuses a frame with duplicates as a PROTOCOL_ERROR. An earlier value
// that is itself invalid is left, and the server refuses the frame. Only a
// payload that came whole in one read is rewritten (what a client's
// SETTINGS frame is in practice: x/net reads each payload with one
// ReadFull); a split one goes to the server as is.
func dedupeSettings(b []byte) {
	if len(b)%6 != 0 || len(b) > maxSettingsPayload {
		return
	}
	for j := 0; j+6 < len(b); j += 6 {
		id := uint16(b[j])<<8 | uint16(b[j+1])
		for k := j + 6; k+6 <= len(b); k += 6 {
			if uint16(b[k])<<8|uint16(b[k+1]) == id && validSetting(id, b[j+2:j+6]) {
				// 0xf0xx is unassigned; j/6 keeps the identifiers distinct.
				b[j], b[j+1] = 0xf0, byte(j/6)
				break
			}
		}
	}
}

// validSetting reports whether the server would accept value for id
// (RFC 9113 §6.5.2); unknown identifiers take any value.
func validSetting(id uint16, v []byte) bool {
	val := uint32(v[0])<<24 | uint32(v[1])<<16 | uint32(v[2])<<8 | uint32(v[3])
	switch id {
	case 0x2, 0x8, 0x9: // ENABLE_PUSH, ENABLE_CONNECT_PROTOCOL, NO_RFC7540_PRIORITIES
		return val <= 1
	case 0x4: // INITIAL_WINDOW_SIZE
		return val <= 1<<31-1
	case 0x5: // MAX_FRAME_SIZE
		return val >= 1<<14 && val < 1<<24
	}
	return true
}
