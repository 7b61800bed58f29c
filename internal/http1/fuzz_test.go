package http1

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

var requestSeeds = []string{
	browserRequest,
	"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
	"\r\nPOST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: x\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nxyz",
	"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nHTTP2-Settings: x\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n",
	"GET http://[::1]:80/p?q HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
	"CONNECT a:443 HTTP/1.1\r\n\r\n",
	"OPTIONS * HTTP/1.0\r\nConnection: keep-alive\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n X: folded\n\n",
	Preface,
}

// FuzzParseRequest checks that ParseRequest stays inside its input, that
// a prefix of an accepted head is incomplete, and that writing an
// accepted head out again and parsing it gives the same request.
func FuzzParseRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req httpmsg.Request
		n, fr, err := ParseRequest(data, &req, Limits{MaxHeaderBytes: 1 << 20})
		if n < 0 || n > len(data) || (err != nil && n != 0) || (err == nil && n == 0) {
			t.Fatalf("n=%d of %d, err %v", n, len(data), err)
		}
		if err != nil {
			return
		}
		var again httpmsg.Request
		if _, _, err := ParseRequest(data[:n-1], &again, Limits{}); err != ErrIncomplete {
			t.Fatalf("prefix of an accepted head: %v", err)
		}
		out := writeRequest(&req)
		m, fr2, err := ParseRequest(out, &again, Limits{MaxHeaderBytes: 1 << 20})
		if err != nil || m != len(out) {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		fr.H2CUpgrade = false
		if fr != fr2 || !sameRequest(&req, &again) {
			t.Fatalf("re-parse differs:\n%+v %+v\n%+v %+v", req, fr, again, fr2)
		}
	})
}

// writeRequest writes req's head as ParseRequest read it.
func writeRequest(req *httpmsg.Request) []byte {
	b := []byte(req.Method + " " + req.Target + " HTTP/1." + strconv.Itoa(req.ProtoMinor) + "\r\n")
	if req.Host != "" || req.ProtoMinor > 0 {
		b = append(b, "Host: "+req.Host+"\r\n"...)
	}
	for _, f := range req.Header {
		b = append(b, f.Name+": "+f.Value+"\r\n"...)
	}
	return append(b, "\r\n"...)
}

func sameRequest(a, b *httpmsg.Request) bool {
	if a.Method != b.Method || a.Target != b.Target || a.Host != b.Host || a.ProtoMinor != b.ProtoMinor ||
		a.ContentLength != b.ContentLength || a.Close != b.Close || len(a.Header) != len(b.Header) {
		return false
	}
	for i := range a.Header {
		if a.Header[i] != b.Header[i] {
			return false
		}
	}
	return true
}

// FuzzChunked checks that decoding does not depend on how the input is
// cut: data, bytes consumed, error and trailers are the same.
func FuzzChunked(f *testing.F) {
	for _, s := range []string{
		"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\nNEXT",
		"1\r\nx\r\n0\r\nT: v\r\nU:w \r\n\r\n",
		"5\nhello\r\n0\r\n\r\n",
		"0000000000000001\r\nx\r\n0;a=\"b\"\r\n\r\n",
		"0\r\nT: a\rb\r\n\r\n",
	} {
		f.Add([]byte(s), []byte{1, 3, 7})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var whole Chunked
		wd, wn, werr := decodeAll(&whole, string(data), 0)
		var split Chunked
		sd, sn, serr := decodeCuts(&split, data, cuts)
		if wd != sd || wn != sn || (werr == nil) != (serr == nil) || (werr != nil && werr.Error() != serr.Error()) ||
			whole.Done() != split.Done() || len(whole.Trailer) != len(split.Trailer) {
			t.Fatalf("whole %q %d %v %v; split %q %d %v %v", wd, wn, werr, whole.Done(), sd, sn, serr, split.Done())
		}
		for i := range whole.Trailer {
			if whole.Trailer[i] != split.Trailer[i] {
				t.Fatalf("trailers %q, %q", whole.Trailer, split.Trailer)
			}
		}
		if wn > len(data) || (whole.Done() && werr != nil) {
			t.Fatalf("consumed %d of %d, done %v, err %v", wn, len(data), whole.Done(), werr)
		}
	})
}

// decodeCuts feeds data to c with Next in pieces whose sizes come from
// cuts, copying each piece so that no span outlives its input.
func decodeCuts(c *Chunked, data, cuts []byte) (string, int, error) {
	var out []byte
	consumed := 0
	for i := 0; consumed < len(data) && !c.Done(); i++ {
		k := len(data) - consumed
		if len(cuts) > 0 {
			k = min(k, int(cuts[i%len(cuts)])+1)
		}
		piece := bytes.Clone(data[consumed : consumed+k])
		for off := 0; off < len(piece) && !c.Done(); {
			n, d, err := c.Next(piece[off:])
			out = append(out, d...)
			off += n
			consumed += n
			if err != nil {
				return string(out), consumed, err
			}
		}
	}
	return string(out), consumed, nil
}

// FuzzParseResponse checks bounds and that an accepted head written out
// again parses the same.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.0 204\r\nConnection: keep-alive\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 304 Not Modified\nX: a\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var resp Response
		n, err := ParseResponse(data, &resp, 0)
		if n < 0 || n > len(data) || (err != nil && n != 0) || (err == nil && n == 0) {
			t.Fatalf("n=%d of %d, err %v", n, len(data), err)
		}
		if err != nil {
			return
		}
		out := []byte("HTTP/1." + strconv.Itoa(resp.ProtoMinor) + " " + strconv.Itoa(resp.Status) + " " + resp.Reason + "\r\n")
		for _, f := range resp.Header {
			out = append(out, f.Name+": "+f.Value+"\r\n"...)
		}
		out = append(out, "\r\n"...)
		var again Response
		if m, err := ParseResponse(out, &again, 0); err != nil || m != len(out) {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		h1, h2 := resp.Header, again.Header
		resp.Header, again.Header = nil, nil
		if !equalResponse(resp, again) || len(h1) != len(h2) {
			t.Fatalf("re-parse differs: %+v, %+v", resp, again)
		}
	})
}
