package httpclient

import (
	"io"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// chunkReader decodes a chunked response body from the connection's read
// buffer; the trailer fields go to *trailer at the end (their strings live
// in the decoder's own buffer, so they survive the read buffer's reuse).
type chunkReader struct {
	d       http1.Chunked
	trailer *httpmsg.Header
}

func (r *chunkReader) reset(trailer *httpmsg.Header) {
	r.d.Reset()
	r.trailer = trailer
}

// read decodes into p, reading from the socket when the buffer holds no
// whole piece of framing.
func (r *chunkReader) read(c *conn, p []byte) (int, error) {
	rb := c.rb
	for {
		if rb.w > rb.r {
			used, n, err := r.d.Decode(rb.b[rb.r:rb.w], p)
			rb.r += used
			if err != nil {
				return n, err
			}
			if r.d.Done() {
				*r.trailer = r.d.Trailer
				return n, io.EOF
			}
			if n > 0 {
				return n, nil
			}
		}
		if err := c.fill(); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
}
