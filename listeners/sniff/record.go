package sniff

import (
	"errors"
	"fmt"
)

// MaxHelloBytes bounds the ClientHello as sent: the records carrying it,
// their 5-byte headers included. A buffer of this size holds any hello
// that Parse accepts.
const MaxHelloBytes = 16 << 10

var (
	// ErrIncomplete means the bytes end before the ClientHello does; Parse
	// returns it with the number of bytes needed (exact when the hello is
	// in one record, else a lower bound).
	ErrIncomplete = errors.New("sniff: incomplete ClientHello")
	// ErrNotTLS means the first bytes cannot start a TLS handshake record,
	// e.g. a plain HTTP request sent to a TLS port.
	ErrNotTLS = errors.New("sniff: not a TLS handshake")
	// ErrTooLarge means the ClientHello's records take more than
	// MaxHelloBytes (or, for Peek, more than the buffer holds).
	ErrTooLarge = errors.New("sniff: ClientHello too large")
	// ErrMalformed is matched (with errors.Is) by every error that reports
	// a ClientHello which breaks its format; the error says how.
	ErrMalformed = errors.New("sniff: malformed ClientHello")
)

// malformedError describes a broken ClientHello; it matches ErrMalformed.
type malformedError struct{ msg string }

func (e *malformedError) Error() string        { return "sniff: malformed ClientHello: " + e.msg }
func (e *malformedError) Is(target error) bool { return target == ErrMalformed }

func malformed(format string, args ...any) error {
	return &malformedError{msg: fmt.Sprintf(format, args...)}
}

const (
	recordHeaderLen     = 5
	recordTypeHandshake = 22
	maxPlaintext        = 1 << 14 // RFC 8446 §5.1
	handshakeHeaderLen  = 4
	typeClientHello     = 1
)

// records walks the handshake records at the start of b and returns the
// ClientHello message (its 4-byte header included) and the number of
// bytes its records take. With ErrIncomplete, the int is the number of
// bytes needed. The message aliases b when it sits in one record.
func records(b []byte) ([]byte, int, error) {
	var w walk
	for off := 0; ; {
		end, err := w.record(b, off)
		if err != nil || w.done {
			if err == nil {
				return w.message(b), end, nil
			}
			return nil, end, err
		}
		off = end
	}
}

// walk is the state of records: the handshake bytes seen so far.
type walk struct {
	head    [handshakeHeaderLen]byte
	have    int // handshake bytes in the records walked
	msgLen  int // the message's length, header included; 0 until known
	records int
	done    bool
}

// record checks the record at off and returns where it ends (or, with
// ErrIncomplete, how many bytes are needed).
func (w *walk) record(b []byte, off int) (int, error) {
	if err := checkRecordHeader(b[off:], off == 0); err != nil {
		return w.incomplete(w.need(off, true), err)
	}
	rlen := int(b[off+3])<<8 | int(b[off+4])
	if rlen == 0 {
		return 0, malformed("empty handshake record")
	}
	if rlen > maxPlaintext {
		return 0, malformed("record length %d exceeds 2^14", rlen)
	}
	end := off + recordHeaderLen + rlen
	w.records++
	payload := b[off+recordHeaderLen : min(end, len(b))]
	if err := w.takeHead(payload); err != nil {
		return 0, err
	}
	w.have += rlen
	switch {
	case w.msgLen != 0 && w.have > w.msgLen:
		return 0, malformed("%d bytes after the ClientHello in its record", w.have-w.msgLen)
	case end > MaxHelloBytes:
		return 0, ErrTooLarge
	case end > len(b):
		return w.incomplete(w.need(end, false), ErrIncomplete)
	}
	w.done = w.msgLen != 0 && w.have == w.msgLen
	return end, nil
}

// incomplete turns an ErrIncomplete whose need is past MaxHelloBytes
// into ErrTooLarge; other errors pass.
func (w *walk) incomplete(need int, err error) (int, error) {
	if err != ErrIncomplete {
		return 0, err
	}
	if need > MaxHelloBytes {
		return 0, ErrTooLarge
	}
	return need, err
}

// checkRecordHeader checks the record header at the start of b as far as
// b goes; first says whether it is the stream's first record.
func checkRecordHeader(b []byte, first bool) error {
	if len(b) >= 1 && b[0] != recordTypeHandshake {
		if first {
			return ErrNotTLS
		}
		return malformed("record of type %d inside the ClientHello", b[0])
	}
	if len(b) >= 2 && b[1] != 3 {
		if first {
			return ErrNotTLS
		}
		return malformed("record version major %d", b[1])
	}
	if len(b) >= 3 && (b[2] < 1 || b[2] > 4) {
		return malformed("record version 0x03%02x", b[2])
	}
	if len(b) < recordHeaderLen {
		return ErrIncomplete
	}
	return nil
}

// takeHead collects the handshake header from a record's payload and
// checks it once complete.
func (w *walk) takeHead(payload []byte) error {
	if w.have >= handshakeHeaderLen {
		return nil
	}
	got := w.have + copy(w.head[w.have:], payload)
	if got >= 1 && w.head[0] != typeClientHello {
		return malformed("handshake message type %d, not ClientHello", w.head[0])
	}
	if got < handshakeHeaderLen {
		return nil
	}
	w.msgLen = handshakeHeaderLen + (int(w.head[1])<<16 | int(w.head[2])<<8 | int(w.head[3]))
	// Each record adds its header: the hello takes at least this much.
	if w.msgLen+recordHeaderLen*w.records > MaxHelloBytes {
		return ErrTooLarge
	}
	return nil
}

// need is a lower bound of the bytes the hello takes when the records
// walked so far end at end; inHeader says the walk stopped in the header
// of the next record. It is exact when the hello is in one record.
func (w *walk) need(end int, inHeader bool) int {
	rest := 0 // handshake bytes still to come in later records
	switch {
	case w.msgLen != 0:
		rest = w.msgLen - w.have
	case w.have < handshakeHeaderLen:
		rest = handshakeHeaderLen - w.have
	}
	if inHeader {
		rest = max(rest, 1)
	}
	if rest <= 0 {
		return end
	}
	return end + recordHeaderLen + rest
}

// message returns the walked ClientHello, copying it out of its records
// when it is fragmented over several.
func (w *walk) message(b []byte) []byte {
	if w.records == 1 {
		return b[recordHeaderLen : recordHeaderLen+w.msgLen]
	}
	msg := make([]byte, 0, w.msgLen)
	for off := 0; len(msg) < w.msgLen; {
		rlen := int(b[off+3])<<8 | int(b[off+4])
		msg = append(msg, b[off+recordHeaderLen:off+recordHeaderLen+rlen]...)
		off += recordHeaderLen + rlen
	}
	return msg
}
