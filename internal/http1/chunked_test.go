package http1

import (
	"errors"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// decodeAll feeds in to a fresh Chunked in pieces of step bytes (0: all
// at once) and returns the data, the bytes consumed and the error.
func decodeAll(c *Chunked, in string, step int) (string, int, error) {
	var out []byte
	consumed := 0
	buf := make([]byte, 5)
	for avail := 0; avail < len(in) && !c.Done(); {
		avail = len(in)
		if step > 0 {
			avail = min(len(in), consumed+step)
		}
		for !c.Done() {
			n, m, err := c.Decode([]byte(in[consumed:avail]), buf)
			out = append(out, buf[:m]...)
			consumed += n
			if err != nil {
				return string(out), consumed, err
			}
			if n == 0 && m == 0 {
				break
			}
		}
	}
	return string(out), consumed, nil
}

func TestChunked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		in      string
		data    string
		trailer httpmsg.Header
		reason  reason // 0: accepted
	}{
		{desc: "two chunks", in: "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\nNEXT", data: "abcde"},
		{desc: "empty body", in: "0\r\n\r\n", data: ""},
		{desc: "upper hex and ext on last", in: "A\r\n0123456789\r\n0;x\r\n\r\n", data: "0123456789"},
		{desc: "leading zeros 16 digits", in: "0000000000000001\r\nx\r\n0\r\n\r\n", data: "x"},
		{desc: "trailers", in: "1\r\nx\r\n0\r\nT: v\r\nU:w \r\n\r\n", data: "x", trailer: httpmsg.Header{{Name: "T", Value: "v"}, {Name: "U", Value: "w"}}},
		{desc: "size not hex", in: "g\r\nhello\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "empty size", in: "\r\n", reason: rChunkSize},
		{desc: "signed size", in: "+5\r\nhello\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "size line bare lf", in: "5\nhello\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "size trailing space", in: "5 \r\nhello\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "size leading space", in: " 5\r\nhello\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "size 17 digits", in: "00000000000000001\r\nx\r\n", reason: rChunkTooLarge},
		{desc: "size overflow", in: "10000000000000000\r\nhello\r\n", reason: rChunkTooLarge},
		{desc: "size over int64", in: "8000000000000000\r\n", reason: rChunkTooLarge},
		{desc: "size cr without lf", in: "5\rhello", reason: rChunkSize},
		{desc: "data without crlf", in: "5\r\nhelloXX0\r\n\r\n", reason: rChunkData},
		{desc: "data bare lf", in: "5\r\nhello\n0\r\n\r\n", reason: rChunkData},
		{desc: "ext with ctl", in: "1;a\x00\r\nx\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "ext bare lf", in: "1;a\nx\r\n0\r\n\r\n", reason: rChunkSize},
		{desc: "ext too long", in: "1;" + strings.Repeat("e", 40) + "\r\nx\r\n0\r\n\r\n", reason: rChunkExt},
		{desc: "ext too long in total", in: strings.Repeat("1;"+strings.Repeat("e", 10)+"\r\nx\r\n", 4) + "0\r\n\r\n", reason: rChunkExt},
		{desc: "trailer bare lf", in: "0\r\nT: v\n\r\n", reason: rBareLF},
		{desc: "final bare lf", in: "0\r\n\n", reason: rBareLF},
		{desc: "trailer obs fold", in: "0\r\nT: v\r\n w\r\n\r\n", reason: rObsFold},
		{desc: "trailer no colon", in: "0\r\nT\r\n\r\n", reason: rNoColon},
		{desc: "trailer space before colon", in: "0\r\nT : v\r\n\r\n", reason: rSpaceInName},
		{desc: "trailer nul", in: "0\r\nT: a\x00\r\n\r\n", reason: rCtlByte},
		{desc: "trailer bare cr", in: "0\r\nT: a\rb\r\n\r\n", reason: rBareCR},
		{desc: "trailer too large", in: "0\r\nT: " + strings.Repeat("v", 64) + "\r\n\r\n", reason: rTrailerTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			for _, step := range []int{0, 1, 2, 7} {
				c := Chunked{MaxExtBytes: 32, MaxTrailerBytes: 48}
				data, n, err := decodeAll(&c, tt.in, step)
				if tt.reason != 0 {
					var e *Error
					if !errors.As(err, &e) || e.Status != 400 || e.Reason != reasonText[tt.reason] {
						t.Fatalf("step %d: err %v, want %q", step, err, reasonText[tt.reason])
					}
					continue
				}
				end := strings.Index(tt.in, "NEXT")
				if end < 0 {
					end = len(tt.in)
				}
				if err != nil || !c.Done() || data != tt.data || n != end {
					t.Fatalf("step %d: %q n=%d done=%v err %v", step, data, n, c.Done(), err)
				}
				if len(c.Trailer) != len(tt.trailer) {
					t.Fatalf("step %d: trailer %q", step, c.Trailer)
				}
				for i, f := range tt.trailer {
					if c.Trailer[i] != f {
						t.Fatalf("step %d: trailer %q", step, c.Trailer)
					}
				}
			}
		})
	}
}

// TestChunkedNextSpans checks that Next returns data as slices of its
// input, without copying, and stays failed after an error.
func TestChunkedNextSpans(t *testing.T) {
	t.Parallel()
	in := []byte("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
	var c Chunked
	var spans []string
	for i := 0; !c.Done(); {
		n, d, err := c.Next(in[i:])
		if err != nil {
			t.Fatal(err)
		}
		if len(d) > 0 {
			if &d[0] != &in[i+n-len(d)] {
				t.Fatal("data is not a slice of the input")
			}
			spans = append(spans, string(d))
		}
		i += n
	}
	if strings.Join(spans, "|") != "abc|de" {
		t.Fatalf("spans %q", spans)
	}
	c.Reset()
	if _, _, err := c.Next([]byte("x")); err == nil {
		t.Fatal("accepted a bad size")
	}
	if _, _, err := c.Next([]byte("0\r\n\r\n")); err == nil {
		t.Fatal("error forgotten")
	}
}
