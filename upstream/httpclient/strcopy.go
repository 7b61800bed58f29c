package httpclient

import (
	"unsafe"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// stringCopier copies the strings of one outbound request head into one
// array allocated for that request, so that what outlives the request
// (x/net's HPACK tables keep the fields they index for the life of the
// connection) holds copies rather than views of the caller's reused
// buffers. One allocation whatever the number of fields.
//
// Lifetime: the array is allocated here and only ever appended to; the
// bytes a returned string views are written once, before the string is
// made, and never again (an append beyond the capacity moves on to a new
// array and leaves the old one to the strings that view it). The garbage
// collector keeps the array alive as long as any of its strings is.
type stringCopier struct{ b []byte }

func newStringCopier(n int) stringCopier { return stringCopier{b: make([]byte, 0, n)} }

// clone returns a copy of s that shares nothing with s.
func (c *stringCopier) clone(s string) string {
	if s == "" {
		return ""
	}
	start := len(c.b)
	c.b = append(c.b, s...)
	return unsafe.String(&c.b[start], len(s))
}

// fieldBytes is the length of h's names and values together.
func fieldBytes(h httpmsg.Header) int {
	n := 0
	for _, f := range h {
		n += len(f.Name) + len(f.Value)
	}
	return n
}

// ownHeader returns a copy of h that shares nothing with it: a new slice
// and its strings in one array.
func ownHeader(h httpmsg.Header) httpmsg.Header {
	if len(h) == 0 {
		return nil
	}
	sc := newStringCopier(fieldBytes(h))
	out := make(httpmsg.Header, len(h))
	for i, f := range h {
		out[i] = httpmsg.Field{Name: sc.clone(f.Name), Value: sc.clone(f.Value)}
	}
	return out
}
