package h1guard

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// feed runs the whole input through a fresh guard of an h2c listener in
// pieces of size step (0: in one piece) and returns it with the bytes the
// server would see.
func feed(in string, step int) (*Guard, []byte) {
	return feedGuard(&Guard{H2C: true}, in, step)
}

func feedGuard(g *Guard, in string, step int) (*Guard, []byte) {
	r := strings.NewReader(in)
	var out []byte
	buf := make([]byte, max(step, len(in), len(inject)))
	if step > 0 {
		buf = buf[:step]
	}
	for {
		n, err := g.Read(r, buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return g, out
		}
	}
}

func TestGuardVerdicts(t *testing.T) {
	t.Parallel()
	const post = "POST / HTTP/1.1\r\nHost: a\r\n"
	tests := []struct {
		desc   string
		in     string
		reason Reason // 0: accepted
		heads  int64
		mode   Mode
	}{
		{desc: "get", in: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", heads: 1},
		{desc: "lf only head", in: "GET / HTTP/1.1\nHost: a\n\n", heads: 1},
		{desc: "pipelined cl and chunked", in: post + "Content-Length: 3\r\n\r\nabc" + post + "Transfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", heads: 3},
		{desc: "crlf after post skipped", in: post + "Content-Length: 1\r\n\r\nx\r\nGET / HTTP/1.1\r\n\r\n", heads: 2},
		{desc: "crlf after get refused", in: "GET / HTTP/1.1\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n", heads: 1, reason: MalformedRequestLine},
		{desc: "same cl twice", in: post + "Content-Length: 1\r\nContent-Length:1 \r\n\r\nx", heads: 1},
		{desc: "te chunked mixed case ows", in: post + "Transfer-Encoding: \t ChUnKeD \r\n\r\n0\r\n\r\n", heads: 1},
		{desc: "http10 cl", in: "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nab", heads: 1},
		{desc: "upgrade passes through", in: "GET / HTTP/1.1\r\nUpgrade: websocket\r\n\r\n\x00\x01garbage", heads: 1, mode: PassThrough},
		{desc: "connect passes through", in: "CONNECT a:1 HTTP/1.1\r\n\r\n\x16\x03", heads: 1, mode: PassThrough},
		{desc: "h2c preface", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00", mode: PassThrough},
		{desc: "h2c preface bad tail", in: "PRI * HTTP/2.0\r\nHost: a\r\n\r\n" + post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", reason: MalformedRequestLine},
		{desc: "h2c preface not first", in: "GET / HTTP/1.1\r\n\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", heads: 1, reason: MalformedRequestLine},
		{desc: "http2 version without preface", in: "GET / HTTP/2.0\r\n\r\n", reason: MalformedRequestLine},
		{desc: "pri method in http1", in: "PRI / HTTP/1.1\r\n\r\n", reason: MalformedRequestLine},
		{desc: "options star upgrade keeps guarding", in: "OPTIONS * HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\n\r\n" + post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", heads: 1, reason: BothLengths},
		{desc: "both lengths", in: post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", reason: BothLengths},
		{desc: "empty cl", in: post + "Content-Length: \r\n\r\n", reason: BadContentLength},
		{desc: "signed cl", in: post + "Content-Length: +3\r\n\r\n", reason: BadContentLength},
		{desc: "cl list", in: post + "Content-Length: 3, 3\r\n\r\n", reason: BadContentLength},
		{desc: "cl differs", in: post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\n", reason: BadContentLength},
		{desc: "cl leading zero differs", in: post + "Content-Length: 3\r\nContent-Length: 03\r\n\r\n", reason: BadContentLength},
		{desc: "cl overflow", in: post + "Content-Length: 9223372036854775808\r\n\r\n", reason: BadContentLength},
		{desc: "te gzip", in: post + "Transfer-Encoding: gzip, chunked\r\n\r\n", reason: BadTransferEncoding},
		{desc: "te twice", in: post + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", reason: BadTransferEncoding},
		{desc: "te http10", in: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", reason: TransferEncodingHTTP10},
		{desc: "obs fold", in: post + "X: a\r\n b\r\n\r\n", reason: ObsFold},
		{desc: "space before colon", in: post + "Content-Length : 3\r\n\r\n", reason: SpaceInName},
		{desc: "nul in value", in: post + "X: a\x00b\r\n\r\n", reason: BadByte},
		{desc: "bare cr in value", in: post + "X: a\rb\r\n\r\n", reason: BareCR},
		{desc: "bare cr request line", in: "GET / HTTP/1.1\rX\r\n\r\n", reason: BareCR},
		{desc: "bad version", in: "GET / HTTP/1.10\r\n\r\n", reason: MalformedRequestLine},
		{desc: "no colon", in: post + "X\r\n\r\n", reason: MalformedField},
		{desc: "chunk size not hex", in: post + "Transfer-Encoding: chunked\r\n\r\nz\r\n", heads: 1, reason: BadChunkSize},
		{desc: "chunk size bare lf", in: post + "Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", heads: 1, reason: BadChunkSize},
		{desc: "chunk size ws", in: post + "Transfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n", heads: 1, reason: BadChunkSize},
		{desc: "chunk data no crlf", in: post + "Transfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", heads: 1, reason: BadChunkData},
		{desc: "chunk too large", in: post + "Transfer-Encoding: chunked\r\n\r\n00000000000000001\r\n", heads: 1, reason: ChunkTooLarge},
		{desc: "trailer bare lf", in: post + "Transfer-Encoding: chunked\r\n\r\n0\r\nT: v\n\r\n", heads: 1, reason: BadTrailer},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			for _, step := range []int{0, 1, 2, 7} {
				g, out := feed(tt.in, step)
				var got Reason
				if e := g.Err(); e != nil {
					got = e.Reason
				}
				if got != tt.reason || g.Heads() != tt.heads {
					t.Fatalf("step %d: reason %v heads %d, want %v %d", step, got, g.Heads(), tt.reason, tt.heads)
				}
				if tt.reason == 0 && (g.Mode() != tt.mode || string(out) != tt.in) {
					t.Fatalf("step %d: mode %v out %q", step, g.Mode(), out)
				}
			}
		})
	}
}

// TestPrefaceNeedsH2C checks that a listener without h2c refuses the
// HTTP/2 preface instead of passing the connection through unguarded.
func TestPrefaceNeedsH2C(t *testing.T) {
	t.Parallel()
	g, out := feedGuard(&Guard{}, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0)
	if e := g.Err(); e == nil || e.Reason != MalformedRequestLine || string(out) != inject {
		t.Fatalf("err %v, out %q", e, out)
	}
}

// TestGuardCutsHead checks what the server sees of a refused request: the
// accepted requests before it, none of its head, then the refused line.
func TestGuardCutsHead(t *testing.T) {
	t.Parallel()
	ok := "GET /a HTTP/1.1\r\nHost: a\r\n\r\n"
	bad := "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	_, out := feed(ok+bad, 0)
	if want := ok + inject; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// A bad first chunk in the same read as its head refuses the head.
	chunked := "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n"
	_, out = feed(ok+chunked, 0)
	if want := ok + inject; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
	// A bad chunk in a later read ends the stream inside the body.
	g, out := feed(chunked, 57) // the head alone fills the first read
	if g.Err() == nil || bytes.Contains(out, []byte(inject)) || len(out) >= len(chunked) {
		t.Fatalf("got %q (err %v)", out, g.Err())
	}
}

func TestReadAfterPoisonIsEOF(t *testing.T) {
	t.Parallel()
	var g Guard
	r := strings.NewReader("GET / HTTP/1.1\r\nX : y\r\n\r\n")
	p := make([]byte, 64)
	n, err := g.Read(r, p)
	if err != nil || string(p[:n]) != inject {
		t.Fatalf("first read %q %v", p[:n], err)
	}
	if n, err = g.Read(r, p); n != 0 || err != io.EOF {
		t.Fatalf("second read %d %v", n, err)
	}
}
