package http1

import (
	"errors"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

const post = "POST / HTTP/1.1\r\nHost: a\r\n"

// TestParseRequestRefused ports the cases of the framing guard
// (listeners/internal/h1guard) and of listeners' framing and bypass tests,
// plus the rules net/http's server adds (Host, version, Expect).
func TestParseRequestRefused(t *testing.T) {
	t.Parallel()
	te := post + "Transfer-Encoding: chunked\r\n"
	tests := []struct {
		desc   string
		in     string
		status int
		reason reason // 0: any reason with that status
	}{
		{desc: "both lengths", in: post + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400, reason: rBothLengths},
		{desc: "both lengths te first", in: te + "Content-Length: 5\r\n\r\n", status: 400, reason: rBothLengths},
		{desc: "empty cl", in: post + "Content-Length: \r\n\r\n", status: 400, reason: rContentLength},
		{desc: "empty cl no space", in: post + "Content-Length:\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "signed cl", in: post + "Content-Length: +3\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "negative cl", in: post + "Content-Length: -3\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "non-numeric cl", in: post + "Content-Length: 5x\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "cl list", in: post + "Content-Length: 3, 3\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "cl differs", in: post + "Content-Length: 3\r\nContent-Length: 4\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "cl leading zero differs", in: post + "Content-Length: 3\r\nContent-Length: 03\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "cl overflow", in: post + "Content-Length: 9223372036854775808\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "cl 20 digits", in: post + "Content-Length: 00000000000000000001\r\n\r\n", status: 400, reason: rContentLength},
		{desc: "te gzip", in: post + "Transfer-Encoding: gzip\r\n\r\n", status: 400, reason: rTransferEncoding},
		{desc: "te list", in: post + "Transfer-Encoding: gzip, chunked\r\n\r\n", status: 400, reason: rTransferEncoding},
		{desc: "te chunked then identity", in: post + "Transfer-Encoding: chunked, identity\r\n\r\n", status: 400, reason: rTransferEncoding},
		{desc: "te twice", in: te + "Transfer-Encoding: chunked\r\n\r\n", status: 400, reason: rTransferEncoding},
		{desc: "te empty", in: post + "Transfer-Encoding:\r\n\r\n", status: 400, reason: rTransferEncoding},
		{desc: "te http10", in: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", status: 400, reason: rTEHTTP10},
		{desc: "te and cl http10", in: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", status: 400, reason: rBothLengths},
		{desc: "obs fold", in: post + "X: a\r\n b\r\n\r\n", status: 400, reason: rObsFold},
		{desc: "obs fold tab", in: post + "X: a\r\n\tb\r\n\r\n", status: 400, reason: rObsFold},
		{desc: "obs fold on first field", in: "GET / HTTP/1.1\r\n Host: a\r\n\r\n", status: 400, reason: rObsFold},
		{desc: "space before colon", in: post + "Content-Length : 3\r\n\r\n", status: 400, reason: rSpaceInName},
		{desc: "tab before colon", in: post + "Transfer-Encoding\t: chunked\r\n\r\n", status: 400, reason: rSpaceInName},
		{desc: "space in name", in: post + "X Y: z\r\n\r\n", status: 400, reason: rSpaceInName},
		{desc: "name not token", in: post + "X(Y): z\r\n\r\n", status: 400, reason: rBadName},
		{desc: "empty name", in: post + ": z\r\n\r\n", status: 400, reason: rBadName},
		{desc: "no colon", in: post + "X\r\n\r\n", status: 400, reason: rNoColon},
		{desc: "nul in value", in: post + "X: a\x00b\r\n\r\n", status: 400, reason: rCtlByte},
		{desc: "del in value", in: post + "X: a\x7fb\r\n\r\n", status: 400, reason: rCtlByte},
		{desc: "vt in value", in: post + "X: a\x0bb\r\n\r\n", status: 400, reason: rCtlByte},
		{desc: "bare cr in value", in: post + "X: a\rb\r\n\r\n", status: 400, reason: rBareCR},
		{desc: "cr cr lf", in: post + "X: a\r\r\n\r\n", status: 400, reason: rBareCR},
		{desc: "bare cr in name", in: post + "X\rY: a\r\n\r\n", status: 400, reason: rBareCR},
		{desc: "bare cr request line", in: "GET / HTTP/1.1\rX\r\n\r\n", status: 400, reason: rBareCR},
		{desc: "bare cr request line 2", in: "GET / HTTP/1.1\r Host: a\r\n\r\n", status: 400, reason: rBareCR},
		{desc: "nul in request line", in: "GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "bad version", in: "GET / HTTP/1.10\r\nHost: a\r\n\r\n", status: 400, reason: rVersion},
		{desc: "lower case version", in: "GET / http/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rVersion},
		{desc: "no version", in: "GET /\r\nHost: a\r\n\r\n", status: 400, reason: rRequestLine},
		{desc: "two spaces", in: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rVersion},
		{desc: "trailing space", in: "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", status: 400, reason: rVersion},
		{desc: "space in target", in: "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rVersion},
		{desc: "http2 version", in: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status: 505},
		{desc: "http0.9 version", in: "GET / HTTP/0.9\r\nHost: a\r\n\r\n", status: 505},
		{desc: "h2 preface", in: Preface, status: 400, reason: rPreface},
		{desc: "pri line with fields", in: "PRI * HTTP/2.0\r\nHost: a\r\n\r\n", status: 400, reason: rPreface},
		{desc: "pri method in http1", in: "PRI / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rMethod},
		{desc: "method not token", in: "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rMethod},
		{desc: "empty method", in: " / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rMethod},
		{desc: "target not origin form", in: "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "star for get", in: "GET * HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "non-ascii target", in: "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "bad escape", in: "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "short escape", in: "GET /%4 HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "absolute with userinfo", in: "GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "absolute empty host", in: "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "absolute bad port", in: "GET http://a:b/ HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "absolute opaque", in: "GET http:a HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTarget},
		{desc: "connect with path", in: "CONNECT a:1/x HTTP/1.1\r\n\r\n", status: 400, reason: rTarget},
		{desc: "missing host", in: "GET / HTTP/1.1\r\n\r\n", status: 400, reason: rNoHost},
		{desc: "two hosts", in: "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", status: 400, reason: rManyHosts},
		{desc: "bad host", in: "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", status: 400, reason: rBadHost},
		{desc: "unclosed IPv6 host", in: "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", status: 400, reason: rBadHost},
		{desc: "IPv6 host not an address", in: "GET / HTTP/1.1\r\nHost: [fe80::zz]:80\r\n\r\n", status: 400, reason: rBadHost},
		{desc: "userinfo in host", in: "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", status: 400, reason: rBadHost},
		{desc: "host port not digits", in: "GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", status: 400, reason: rBadHost},
		{desc: "three empty lines first", in: "\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rTooManyEmpty},
		{desc: "bare cr before request line", in: "\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400, reason: rBareCR},
		{desc: "expect other", in: post + "Expect: 200-ok\r\nContent-Length: 1\r\n\r\n", status: 417},
		{desc: "tls hello", in: "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", status: 400, reason: rMethod},
		{desc: "too many fields", in: post + strings.Repeat("X: y\r\n", 10) + "\r\n", status: 431},
		{desc: "target too long", in: "GET /" + strings.Repeat("a", 300) + " HTTP/1.1\r\nHost: a\r\n\r\n", status: 414},
		{desc: "head too large", in: "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("a", 300) + "\r\n\r\n", status: 431},
		{desc: "incomplete but too large", in: post + strings.Repeat("X", 300), status: 431},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var req httpmsg.Request
			n, _, err := ParseRequest([]byte(tt.in), &req, Limits{MaxHeaderBytes: 256, MaxFields: 8})
			var e *Error
			if !errors.As(err, &e) || n != 0 {
				t.Fatalf("got n=%d err %v, want status %d", n, err, tt.status)
			}
			if e.Status != tt.status || (tt.reason != 0 && e.Reason != reasonText[tt.reason]) {
				t.Fatalf("got %d %q, want %d %q", e.Status, e.Reason, tt.status, reasonText[tt.reason])
			}
		})
	}
}

func TestParseRequestAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		in     string
		body   string // what follows the head
		method string
		target string
		host   string
		minor  int
		fields int // len(req.Header)
		f      Framing
	}{
		{desc: "get", in: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, f: Framing{KeepAlive: true}},
		{desc: "lf only head", in: "GET /x?y HTTP/1.1\nHost: a\nX: 1\n\n", method: "GET", target: "/x?y", host: "a", minor: 1, fields: 1, f: Framing{KeepAlive: true}},
		{desc: "cl body follows", in: post + "Content-Length: 3\r\n\r\n", body: "abcPOST", method: "POST", target: "/", host: "a", minor: 1, fields: 1, f: Framing{ContentLength: 3, KeepAlive: true}},
		{desc: "same cl twice", in: post + "Content-Length: 1\r\nContent-Length:1 \r\n\r\n", body: "x", method: "POST", target: "/", host: "a", minor: 1, fields: 2, f: Framing{ContentLength: 1, KeepAlive: true}},
		{desc: "te chunked mixed case ows", in: post + "Transfer-Encoding: \t ChUnKeD \r\n\r\n", body: "0\r\n\r\n", method: "POST", target: "/", host: "a", minor: 1, fields: 1, f: Framing{Chunked: true, ContentLength: -1, KeepAlive: true}},
		{desc: "http10 cl", in: "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\n", body: "ab", method: "POST", target: "/", minor: 0, fields: 1, f: Framing{ContentLength: 2}},
		{desc: "http10 keep-alive", in: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", method: "GET", target: "/", fields: 1, f: Framing{KeepAlive: true}},
		{desc: "connection close", in: "GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, fields: 1},
		{desc: "http/1.2 is 1.x", in: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", method: "GET", target: "/", host: "a", minor: 2, f: Framing{KeepAlive: true}},
		{desc: "upgrade", in: "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", body: "\x00\x01", method: "GET", target: "/", host: "a", minor: 1, fields: 2, f: Framing{Upgrade: true, KeepAlive: true}},
		{desc: "upgrade ignored on 1.0", in: "GET / HTTP/1.0\r\nUpgrade: websocket\r\n\r\n", method: "GET", target: "/", fields: 1},
		{desc: "options star upgrade", in: "OPTIONS * HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\n\r\n", method: "OPTIONS", target: "*", host: "a", minor: 1, fields: 1, f: Framing{Upgrade: true, KeepAlive: true}},
		{desc: "connect", in: "CONNECT a:1 HTTP/1.1\r\n\r\n", body: "\x16\x03", method: "CONNECT", target: "a:1", host: "a:1", minor: 1, f: Framing{Upgrade: true, KeepAlive: true}},
		{desc: "ipv6 host", in: "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", method: "GET", target: "/", host: "[::1]:8080", minor: 1, f: Framing{KeepAlive: true}},
		{desc: "connect ipv6", in: "CONNECT [::1]:443 HTTP/1.1\r\nHost: x\r\n\r\n", method: "CONNECT", target: "[::1]:443", host: "[::1]:443", minor: 1, f: Framing{Upgrade: true, KeepAlive: true}},
		{desc: "h2c offer dropped", in: "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nX: y\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, fields: 2, f: Framing{H2CUpgrade: true, KeepAlive: true}},
		{desc: "expect 100", in: post + "Expect: 100-Continue\r\nContent-Length: 4\r\n\r\n", method: "POST", target: "/", host: "a", minor: 1, fields: 2, f: Framing{ContentLength: 4, Expect100: true, KeepAlive: true}},
		{desc: "expect 100 without body", in: post + "Expect: 100-continue\r\n\r\n", method: "POST", target: "/", host: "a", minor: 1, fields: 1, f: Framing{KeepAlive: true}},
		{desc: "leading crlf", in: "\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, f: Framing{KeepAlive: true}},
		{desc: "absolute form host wins", in: "GET http://b:8080/p?q HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", target: "http://b:8080/p?q", host: "b:8080", minor: 1, f: Framing{KeepAlive: true}},
		{desc: "empty host http11", in: "GET / HTTP/1.1\r\nHost:\r\n\r\n", method: "GET", target: "/", minor: 1, f: Framing{KeepAlive: true}},
		{desc: "obs-text and tab in value", in: "GET / HTTP/1.1\r\nHost: a\r\nX: \xe9t\té \r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, fields: 1, f: Framing{KeepAlive: true}},
		{desc: "escaped path", in: "GET /a%2Fb?%zz HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", target: "/a%2Fb?%zz", host: "a", minor: 1, f: Framing{KeepAlive: true}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			req := httpmsg.Request{Header: make(httpmsg.Header, 0, 4)}
			b := []byte(tt.in + tt.body)
			n, f, err := ParseRequest(b, &req, Limits{})
			if err != nil || n != len(tt.in) {
				t.Fatalf("n=%d err %v, want n=%d", n, err, len(tt.in))
			}
			if req.Method != tt.method || req.Target != tt.target || req.Host != tt.host || req.ProtoMajor != 1 || req.ProtoMinor != tt.minor {
				t.Errorf("got %q %q host %q 1.%d", req.Method, req.Target, req.Host, req.ProtoMinor)
			}
			if f != tt.f || req.ContentLength != f.ContentLength || req.Close == f.KeepAlive {
				t.Errorf("framing %+v (req cl %d close %v), want %+v", f, req.ContentLength, req.Close, tt.f)
			}
			if len(req.Header) != tt.fields || req.Header.Has("Host") {
				t.Errorf("header %q", req.Header)
			}
			for i := range len(tt.in) - 1 { // every prefix is incomplete
				if _, _, err := ParseRequest(b[:i], &req, Limits{}); err != ErrIncomplete {
					t.Fatalf("prefix %d: %v", i, err)
				}
			}
		})
	}
}

func TestParseRequestHeaderFields(t *testing.T) {
	t.Parallel()
	in := "GET / HTTP/1.1\r\nhost: a\r\nX-A:  one \t\r\nx-a: two\r\nEmpty:\r\n\r\n"
	var req httpmsg.Request
	if _, _, err := ParseRequest([]byte(in), &req, Limits{}); err != nil {
		t.Fatal(err)
	}
	want := httpmsg.Header{{Name: "X-A", Value: "one"}, {Name: "x-a", Value: "two"}, {Name: "Empty", Value: ""}}
	if len(req.Header) != len(want) {
		t.Fatalf("got %q", req.Header)
	}
	for i := range want {
		if req.Header[i] != want[i] {
			t.Errorf("field %d: %q, want %q", i, req.Header[i], want[i])
		}
	}
}
