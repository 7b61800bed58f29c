package h3

import (
	"errors"
	"io"
	"net/http"
	"strconv"
)

// body reads a message body from DATA frames (RFC 9114 §4.1): a
// HEADERS frame after them is the trailer section, and anything after
// that is an error. It checks the length against content-length.
type body struct {
	fr       *frameReader
	left     uint64 // bytes left in the current DATA frame
	declared int64  // content-length; -1 when not sent
	got      int64
	trailer  http.Header // filled from a trailer section; may be nil
	limit    int         // bound on a trailer section
	done     bool
	err      error
	onFinish func() // called once when the body has been read to its end
	onClose  func() // called by Close before the end
}

var (
	errBodyTooLong  = protoErr(ErrMessage, "body longer than its content-length")
	errBodyTooShort = protoErr(ErrMessage, "body shorter than its content-length")
)

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	for b.left == 0 {
		if err := b.nextFrame(); err != nil {
			b.err = err
			if err == io.EOF && b.onFinish != nil {
				b.onFinish()
			}
			return 0, err
		}
	}
	if uint64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.fr.r.Read(p)
	b.left -= uint64(n)
	b.got += int64(n)
	if b.declared >= 0 && b.got > b.declared {
		b.err = errBodyTooLong
		return n, b.err
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

// nextFrame moves to the next DATA frame; io.EOF at the end of the body.
func (b *body) nextFrame() error {
	if b.done {
		return io.EOF
	}
	typ, n, err := b.fr.next()
	switch {
	case err == io.EOF:
		b.done = true
		if b.declared >= 0 && b.got != b.declared {
			return errBodyTooShort
		}
		return io.EOF
	case err != nil:
		return err
	case typ == frameData:
		b.left = n
		return nil
	case typ == frameHeaders:
		return b.readTrailer(n)
	default:
		return protoErr(ErrFrameUnexpected, "frame type %#x in a message", typ)
	}
}

func (b *body) readTrailer(n uint64) error {
	p, err := b.fr.payload(n, b.limit, protoErr(ErrExcessiveLoad, "trailer section too large"))
	if err != nil {
		return err
	}
	err = decodeFieldSection(p, b.limit, func(f Field) error {
		if len(f.Name) > 0 && f.Name[0] == ':' {
			return protoErr(ErrMessage, "pseudo-header in a trailer section")
		}
		if b.trailer != nil {
			b.trailer.Add(f.Name, f.Value)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Nothing may follow the trailer section (§4.1).
	if _, _, err := b.fr.next(); err != io.EOF {
		return protoErr(ErrFrameUnexpected, "frame after the trailer section")
	}
	b.done = true
	if b.declared >= 0 && b.got != b.declared {
		return errBodyTooShort
	}
	return io.EOF
}

// parseContentLength reads one content-length value; -1 when absent.
func parseContentLength(vv []string) (int64, error) {
	if len(vv) == 0 {
		return -1, nil
	}
	if len(vv) > 1 {
		for _, v := range vv[1:] {
			if v != vv[0] {
				return 0, errors.New("differing content-length values")
			}
		}
	}
	n, err := strconv.ParseUint(vv[0], 10, 63)
	if err != nil {
		return 0, errors.New("invalid content-length")
	}
	return int64(n), nil
}

// Close ends reading: the rest of the body is not wanted.
func (b *body) Close() error {
	if !b.done && b.onClose != nil {
		b.onClose()
	}
	if b.err == nil {
		b.err = errBodyClosed
	}
	return nil
}

var errBodyClosed = errors.New("h3: read on a closed body")
