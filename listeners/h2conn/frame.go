package h2conn

import "encoding/binary"

// Frame types, flags, settings and error codes (RFC 9113 §6, §7).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20

	settingHeaderTableSize      = 0x1
	settingEnablePush           = 0x2
	settingMaxConcurrentStreams = 0x3
	settingInitialWindowSize    = 0x4
	settingMaxFrameSize         = 0x5
	settingMaxHeaderListSize    = 0x6

	codeNo            = 0x0
	codeProtocol      = 0x1
	codeInternal      = 0x2
	codeFlowControl   = 0x3
	codeStreamClosed  = 0x5
	codeFrameSize     = 0x6
	codeRefusedStream = 0x7
	codeCancel        = 0x8
	codeCompression   = 0x9
	codeCalm          = 0xb
)

const (
	frameHeaderLen   = 9
	defaultFrameSize = 1 << 14
	maxWindow        = 1<<31 - 1
	defaultWindow    = 65535
)

// clientPreface opens every client connection (RFC 9113 §3.4).
const clientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// frameHeader is a parsed 9-byte frame header.
type frameHeader struct {
	length uint32
	typ    byte
	flags  byte
	stream uint32
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length: uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:    b[3], flags: b[4],
		stream: binary.BigEndian.Uint32(b[5:]) & 0x7fffffff,
	}
}

// appendFrameHeader appends a frame header.
func appendFrameHeader(b []byte, length int, typ, flags byte, stream uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendRST(b []byte, stream, code uint32) []byte {
	return appendUint32(appendFrameHeader(b, 4, frameRSTStream, 0, stream), code)
}

func appendWindowUpdate(b []byte, stream, incr uint32) []byte {
	return appendUint32(appendFrameHeader(b, 4, frameWindowUpdate, 0, stream), incr)
}

func appendGoAway(b []byte, last, code uint32) []byte {
	return appendUint32(appendUint32(appendFrameHeader(b, 8, frameGoAway, 0, 0), last), code)
}

// appendHeaderFrames appends block as a HEADERS frame, split into
// CONTINUATION frames of at most max bytes.
func appendHeaderFrames(b []byte, stream uint32, block []byte, endStream bool, max int) []byte {
	typ := byte(frameHeaders)
	for first := true; first || len(block) > 0; first = false {
		n := min(len(block), max)
		var flags byte
		if first && endStream {
			flags |= flagEndStream
		}
		if n == len(block) {
			flags |= flagEndHeaders
		}
		b = appendFrameHeader(b, n, typ, flags, stream)
		b = append(b, block[:n]...)
		block = block[n:]
		typ = frameContinuation
	}
	return b
}

// connError ends the connection with GOAWAY; streamError resets one
// stream. Kind is an httpmsg reason for the refusal report ("" when the
// error is not the client's, or not worth a report).
type connError struct {
	code uint32
	kind string
	why  string
}

func (e *connError) Error() string { return "h2conn: " + e.why }

type streamError struct {
	stream uint32
	code   uint32
	kind   string
}
