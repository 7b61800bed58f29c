package h3

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"
)

// HTTP/3 frame and stream types (RFC 9114 §7.2, §6.2) and settings.
const (
	frameData     = 0x0
	frameHeaders  = 0x1
	frameSettings = 0x4
	frameGoAway   = 0x7

	streamControl      = 0x0
	streamPush         = 0x1
	streamQPACKEncoder = 0x2
	streamQPACKDecoder = 0x3

	settingQPACKTableCapacity = 0x1
	settingMaxFieldSection    = 0x6
	settingQPACKBlocked       = 0x7
)

// ErrCode is an HTTP/3 error code (RFC 9114 §8.1), sent in
// CONNECTION_CLOSE or RESET_STREAM/STOP_SENDING.
type ErrCode uint64

// The HTTP/3 error codes edgeway sends.
const (
	ErrNoError              ErrCode = 0x100
	ErrGeneralProtocol      ErrCode = 0x101
	ErrInternal             ErrCode = 0x102
	ErrStreamCreation       ErrCode = 0x103
	ErrClosedCriticalStream ErrCode = 0x104
	ErrFrameUnexpected      ErrCode = 0x105
	ErrFrame                ErrCode = 0x106
	ErrExcessiveLoad        ErrCode = 0x107
	ErrMissingSettings      ErrCode = 0x10a
	ErrRequestRejected      ErrCode = 0x10b
	ErrRequestCancelled     ErrCode = 0x10c
	ErrRequestIncomplete    ErrCode = 0x10d
	ErrMessage              ErrCode = 0x10e
	ErrQPACKDecompression   ErrCode = 0x200
)

// Error is an HTTP/3 error this end detected, with the code it sends.
type Error struct {
	Code ErrCode
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("h3: %s (code %#x)", e.Msg, uint64(e.Code)) }

// Is matches any *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

func protoErr(code ErrCode, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// frameReader reads HTTP/3 frames from a stream.
type frameReader struct {
	r *bufio.Reader
}

// next reads the next frame's type and length, skipping frames of
// unknown (and reserved grease) types; the payload is left to read.
func (fr *frameReader) next() (typ, length uint64, err error) {
	for {
		if typ, err = quicvarint.Read(fr.r); err != nil {
			return 0, 0, err
		}
		if length, err = quicvarint.Read(fr.r); err != nil {
			return 0, 0, unexpectedEOF(err)
		}
		switch typ {
		case frameData, frameHeaders, frameSettings, frameGoAway, 0x3, 0x5, 0xd:
			return typ, length, nil
		case 0x2, 0x6, 0x8, 0x9: // HTTP/2 frame types, reserved (§7.2.8)
			return 0, 0, protoErr(ErrFrameUnexpected, "HTTP/2 frame type %#x", typ)
		}
		if _, err := fr.r.Discard(int(min(length, 1<<62))); err != nil {
			return 0, 0, unexpectedEOF(err)
		}
	}
}

// payload reads a frame payload of n bytes, at most limit.
func (fr *frameReader) payload(n uint64, limit int, tooLarge error) ([]byte, error) {
	if n > uint64(limit) {
		return nil, tooLarge
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(fr.r, b); err != nil {
		return nil, unexpectedEOF(err)
	}
	return b, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// appendFrameHeader appends a frame's type and length.
func appendFrameHeader(b []byte, typ, length uint64) []byte {
	return quicvarint.Append(quicvarint.Append(b, typ), length)
}

// settings is the SETTINGS frame this end sends on its control stream.
func appendSettings(b []byte, maxFieldSection int) []byte {
	var p []byte
	p = quicvarint.Append(p, settingQPACKTableCapacity)
	p = quicvarint.Append(p, 0)
	p = quicvarint.Append(p, settingQPACKBlocked)
	p = quicvarint.Append(p, 0)
	p = quicvarint.Append(p, settingMaxFieldSection)
	p = quicvarint.Append(p, uint64(maxFieldSection))
	b = appendFrameHeader(b, frameSettings, uint64(len(p)))
	return append(b, p...)
}

// openControl opens this end's control stream and sends SETTINGS.
func openControl(c *quic.Conn, maxFieldSection int) (*quic.SendStream, error) {
	s, err := c.OpenUniStream()
	if err != nil {
		return nil, fmt.Errorf("opening the control stream: %w", err)
	}
	b := quicvarint.Append(nil, streamControl)
	if _, err := s.Write(appendSettings(b, maxFieldSection)); err != nil {
		return nil, fmt.Errorf("writing SETTINGS: %w", err)
	}
	return s, nil
}

// readPeerStreams serves the peer's unidirectional streams until the
// connection ends: the control stream must open with SETTINGS and may
// carry GOAWAY (onGoAway gets its id); QPACK streams are drained (with
// no dynamic table they carry nothing this end acts on); push and
// unknown stream types are refused (§6.2.3, §9).
func readPeerStreams(c *quic.Conn, onGoAway func(uint64)) {
	control := false
	for {
		s, err := c.AcceptUniStream(c.Context())
		if err != nil {
			return
		}
		r := bufio.NewReaderSize(s, 64)
		typ, err := quicvarint.Read(r)
		if err != nil {
			continue
		}
		switch typ {
		case streamControl:
			if control {
				c.CloseWithError(quic.ApplicationErrorCode(ErrStreamCreation), "second control stream")
				return
			}
			control = true
			go readControl(c, &frameReader{r: r}, onGoAway)
		case streamQPACKEncoder, streamQPACKDecoder:
			go io.Copy(io.Discard, r)
		default:
			s.CancelRead(quic.StreamErrorCode(ErrStreamCreation))
		}
	}
}

func readControl(c *quic.Conn, fr *frameReader, onGoAway func(uint64)) {
	fail := func(code ErrCode, msg string) {
		c.CloseWithError(quic.ApplicationErrorCode(code), msg)
	}
	typ, n, err := fr.next()
	if err != nil || typ != frameSettings {
		fail(ErrMissingSettings, "control stream must open with SETTINGS")
		return
	}
	if _, err := fr.payload(n, 4096, protoErr(ErrExcessiveLoad, "SETTINGS too large")); err != nil {
		fail(ErrFrame, "bad SETTINGS")
		return
	}
	for {
		typ, n, err := fr.next()
		if err != nil {
			if c.Context().Err() == nil {
				fail(ErrClosedCriticalStream, "control stream closed")
			}
			return
		}
		p, err := fr.payload(n, 64, protoErr(ErrFrame, "control frame too large"))
		if err != nil {
			fail(ErrFrame, "bad control frame")
			return
		}
		switch typ {
		case frameGoAway:
			id, _, err := quicvarint.Parse(p)
			if err != nil {
				fail(ErrFrame, "bad GOAWAY")
				return
			}
			if onGoAway != nil {
				onGoAway(id)
			}
		case frameSettings, frameData, frameHeaders:
			fail(ErrFrameUnexpected, "unexpected frame on the control stream")
			return
		}
	}
}
