package h1guard

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
)

var fuzzSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
	"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nT: x\r\n\r\n\r\nGET / HTTP/1.0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\nxyz",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"GET / HTTP/1.1\nHost: a\n X: folded\n\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
}

// FuzzGuardSplit checks that the guard's decisions do not depend on how the
// stream is cut into reads, and that a refused byte never reaches the server.
func FuzzGuardSplit(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), []byte{3, 1, 17, 40})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var whole Guard
		kept := whole.Filter(bytes.Clone(data))
		var split Guard
		delivered, rest := 0, data
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if len(cuts) > 0 {
				n = min(n, int(cuts[i%len(cuts)])+1)
			}
			k := split.Filter(rest[:n])
			if split.Mode() != Poisoned {
				delivered += k
			}
			rest = rest[n:]
		}
		if whole.Mode() != split.Mode() || whole.Heads() != split.Heads() ||
			whole.Upgraded() != split.Upgraded() {
			t.Fatalf("whole: mode %v heads %d; split: mode %v heads %d",
				whole.Mode(), whole.Heads(), split.Mode(), split.Heads())
		}
		if whole.Mode() == PassThrough && whole.Offset() != split.Offset() {
			t.Fatalf("pass-through at %d whole, %d split", whole.Offset(), split.Offset())
		}
		we, se := whole.Err(), split.Err()
		if (we == nil) != (se == nil) || (we != nil && *we != *se) {
			t.Fatalf("whole err %v, split err %v", we, se)
		}
		if we == nil {
			if kept != len(data) {
				t.Fatalf("kept %d of %d without a violation", kept, len(data))
			}
			return
		}
		if int64(kept) > we.Offset || int64(delivered) > we.Offset {
			t.Fatalf("delivered past the violation at %d: %d, %d", we.Offset, kept, delivered)
		}
	})
}

// FuzzGoAgreement checks that wherever Go's own parser finds the end of a
// request in a stream, the guard either refused the stream before that
// point or agrees on the boundary and on the number of requests.
func FuzzGoAgreement(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cr := &countReader{r: bytes.NewReader(data)}
		br := bufio.NewReader(cr)
		post := false
		for count := int64(1); ; count++ {
			req, ok := goReadRequest(br, post)
			if !ok {
				return
			}
			end := cr.n - int64(br.Buffered())
			var g Guard
			g.Filter(bytes.Clone(data[:end]))
			switch {
			case g.Mode() == Poisoned:
				if g.Err().Offset >= end {
					t.Fatalf("refused at %d, after Go's request end %d", g.Err().Offset, end)
				}
				return
			case g.Mode() == PassThrough:
				return
			case g.Heads() != count || g.st != stReqStart:
				t.Fatalf("Go ends request %d at %d; guard has %d heads, state %d", count, end, g.Heads(), g.st)
			}
			post = req.Method == "POST"
		}
	})
}

// goReadRequest reads one request and its body as Go's server does.
func goReadRequest(br *bufio.Reader, afterPOST bool) (*http.Request, bool) {
	if afterPOST {
		peek, _ := br.Peek(4)
		n := 0
		for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
			n++
		}
		br.Discard(n)
	}
	req, err := http.ReadRequest(br)
	if err != nil || req.ProtoMajor != 1 {
		return nil, false
	}
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return nil, false
	}
	return req, true
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
