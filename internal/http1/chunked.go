package http1

import (
	"bytes"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Defaults of the Chunked limits.
const (
	DefaultMaxExtBytes     = 16 << 10
	DefaultMaxTrailerBytes = 16 << 10
)

// maxChunkDigits is the most hex digits of a chunk size, as net/http.
const maxChunkDigits = 16

type chunkState uint8

const (
	csSize     chunkState = iota // first hex digit of a chunk size
	csSizeMore                   // further hex digits, ';' or CR
	csExt                        // chunk extension, up to CR
	csSizeLF                     // LF ending the chunk-size line
	csData                       // chunk data
	csDataCR                     // CR after chunk data
	csDataLF                     // LF after chunk data
	csTrailer                    // a trailer line, up to LF
	csDone                       // after the final CRLF
	csFailed
)

// Chunked decodes a chunked body (RFC 9112 §7.1) from slices of it as
// they arrive: it keeps its place between calls, so input may be cut
// anywhere. Line ends are CRLF only; sizes are 1 to 16 hex digits
// without sign or whitespace, at most 2^63-1; extensions are skipped
// (no control bytes but HTAB) with their total length capped; trailer
// fields follow the header rules. Errors are *Error with status 400.
//
// The zero value is ready; Reset readies it for another body and keeps
// its buffers. It allocates only when TrailerBuf or Trailer must grow.
type Chunked struct {
	// MaxExtBytes caps the chunk extension bytes of the whole body.
	// Zero or less means DefaultMaxExtBytes.
	MaxExtBytes int
	// MaxTrailerBytes caps the trailer section, line ends included.
	// Zero or less means DefaultMaxTrailerBytes.
	MaxTrailerBytes int
	// Trailer receives the trailer fields; complete once Done. Its
	// strings point into TrailerBuf.
	Trailer httpmsg.Header
	// TrailerBuf keeps the trailer section's bytes (lines may span
	// calls). Give it capacity to avoid allocating.
	TrailerBuf []byte

	st     chunkState
	fail   reason
	digits uint8
	remain uint64 // bytes of chunk data left
	ext    int    // extension bytes so far
	line   int    // where the current trailer line starts in TrailerBuf
}

// Reset readies c for a new body, keeping limits and buffers: the
// strings of the previous Trailer must no longer be in use.
func (c *Chunked) Reset() {
	*c = Chunked{
		MaxExtBytes: c.MaxExtBytes, MaxTrailerBytes: c.MaxTrailerBytes,
		Trailer: c.Trailer[:0], TrailerBuf: c.TrailerBuf[:0],
	}
}

// Done reports whether the last chunk and the trailer section were read.
func (c *Chunked) Done() bool { return c.st == csDone }

// Next consumes framing from in up to and including the next span of
// chunk data, which it returns as data, a slice of in. It returns after
// one span, at the end of the body (Done) or when in is used up; call
// it again with in[n:] (or, when n == len(in), with the next bytes
// read). Bytes after the body are not consumed.
func (c *Chunked) Next(in []byte) (n int, data []byte, err error) {
	return c.next(in, len(in))
}

// Decode copies the body's data from in to out: it consumes framing
// and data until in is used up, out is full or the body is done.
func (c *Chunked) Decode(in, out []byte) (consumed, produced int, err error) {
	for consumed < len(in) && !c.Done() {
		n, d, err := c.next(in[consumed:], len(out)-produced)
		produced += copy(out[produced:], d)
		consumed += n
		if err != nil || n == 0 {
			return consumed, produced, err
		}
	}
	return consumed, produced, nil
}

// next is Next returning at most max bytes of data.
func (c *Chunked) next(in []byte, max int) (int, []byte, error) {
	i := 0
	for i < len(in) {
		switch c.st {
		case csFailed:
			return i, nil, reqErr(c.fail)
		case csDone:
			return i, nil, nil
		case csData:
			k := int(min(uint64(len(in)-i), c.remain, uint64(max)))
			if c.remain -= uint64(k); c.remain == 0 {
				c.st = csDataCR
			}
			return i + k, in[i : i+k], nil
		}
		var r reason
		if i, r = c.step(in, i); r != rOK {
			c.st, c.fail = csFailed, r
			return i, nil, reqErr(r)
		}
	}
	if c.st == csFailed {
		return i, nil, reqErr(c.fail)
	}
	return i, nil, nil
}

// step advances through framing from in[i] and returns the next index.
func (c *Chunked) step(in []byte, i int) (int, reason) {
	switch c.st {
	case csSize, csSizeMore:
		return c.size(in[i], i)
	case csExt:
		return c.extension(in, i)
	case csTrailer:
		return c.trailer(in, i)
	}
	return c.lineEnd(in[i], i)
}

func (c *Chunked) size(b byte, i int) (int, reason) {
	v, hex := unhex(b)
	switch {
	case hex && c.digits == maxChunkDigits:
		return i, rChunkTooLarge
	case hex:
		c.remain = c.remain<<4 | uint64(v)
		c.digits++
		c.st = csSizeMore
		return i + 1, rOK
	case c.st == csSize:
		return i, rChunkSize
	case c.remain > 1<<63-1:
		return i, rChunkTooLarge
	case b == ';':
		c.st = csExt
	case b == '\r':
		c.st = csSizeLF
	default:
		return i, rChunkSize
	}
	return i + 1, rOK
}

// extension skips a chunk extension up to its CR.
func (c *Chunked) extension(in []byte, i int) (int, reason) {
	max := c.MaxExtBytes
	if max <= 0 {
		max = DefaultMaxExtBytes
	}
	for ; i < len(in); i++ {
		b := in[i]
		if b == '\r' {
			c.st = csSizeLF
			return i + 1, rOK
		}
		if !valueTab[b] {
			return i, rChunkSize
		}
		if c.ext++; c.ext > max {
			return i, rChunkExt
		}
	}
	return i, rOK
}

// lineEnd handles the one-byte states: the LF of a size line and the
// CRLF after chunk data.
func (c *Chunked) lineEnd(b byte, i int) (int, reason) {
	switch c.st {
	case csSizeLF:
		if b != '\n' {
			return i, rChunkSize
		}
		c.st = csData
		if c.remain == 0 {
			c.st, c.line = csTrailer, len(c.TrailerBuf)
		}
	case csDataCR:
		if b != '\r' {
			return i, rChunkData
		}
		c.st = csDataLF
	default: // csDataLF
		if b != '\n' {
			return i, rChunkData
		}
		c.st, c.remain, c.digits = csSize, 0, 0
	}
	return i + 1, rOK
}

// trailer collects a trailer line into TrailerBuf and parses it at its
// LF; the empty line ends the body (RFC 9112 §7.1.2).
func (c *Chunked) trailer(in []byte, i int) (int, reason) {
	max := c.MaxTrailerBytes
	if max <= 0 {
		max = DefaultMaxTrailerBytes
	}
	rest := in[i:]
	lf := bytes.IndexByte(rest, '\n')
	if lf >= 0 {
		rest = rest[:lf]
	}
	if len(c.TrailerBuf)+len(rest) > max {
		return i, rTrailerTooLarge
	}
	c.TrailerBuf = append(c.TrailerBuf, rest...)
	if lf < 0 {
		return len(in), rOK
	}
	line := c.TrailerBuf[c.line:]
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return i + lf, rBareLF
	}
	line = line[:len(line)-1]
	if len(line) == 0 {
		c.TrailerBuf = c.TrailerBuf[:c.line]
		c.st = csDone
		return i + lf + 1, rOK
	}
	name, value, r := parseField(line)
	if r != rOK {
		return i + lf, r
	}
	c.Trailer = append(c.Trailer, httpmsg.Field{Name: str(name), Value: str(value)})
	c.line = len(c.TrailerBuf)
	return i + lf + 1, rOK
}
