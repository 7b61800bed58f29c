package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"slices"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Differential test against net/http's http.ReadRequest.
//
// Where both accept a head they must agree on method, target
// (RequestURI), Host, HTTP version, fields (canonical names, order of
// names ignored), body length or chunking and Close.
//
// Where ParseRequest accepts and net/http refuses, ParseRequest is right;
// each such class is listed here and is the only thing the fuzz target
// skips (acceptedOnly):
//   - empty lines before the request line: RFC 9112 §2.2 says a server
//     SHOULD ignore at least one; http.ReadRequest never does (Go's
//     server skips up to 4 CR/LF bytes, and only after a POST).
//
// Where net/http accepts and ParseRequest refuses, that is the strictness
// we want (the framing guard's rules and RFC 9112 MUSTs that net/http's
// reader leaves to its server or does not apply): Content-Length with
// Transfer-Encoding (Go drops the Content-Length), Transfer-Encoding on
// HTTP/1.0 (Go ignores it), whitespace in field names, obs-fold (Go
// joins the lines), a missing, repeated or invalid Host (Go's server
// checks, its reader does not), versions other than 1.x (Go's server
// answers 505 too), "*" for a method other than OPTIONS, a target that
// is not ASCII, userinfo, '%' or an invalid IP literal in a target's
// authority, an empty authority, an opaque absolute URI ("http:x"),
// a CONNECT target with a path, the PRI method, Expect other than
// 100-continue (Go's server answers 417 too).

// acceptedOnly reports whether data belongs to a class that ParseRequest
// accepts and net/http refuses, listed above.
func acceptedOnly(data []byte) bool {
	return len(data) > 0 && (data[0] == '\r' || data[0] == '\n')
}

func TestDifferential(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		in   string
	}{
		{desc: "browser", in: browserRequest},
		{desc: "absolute form", in: "GET http://b:8080/p?q HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "pragma", in: "GET / HTTP/1.0\r\nPragma: no-cache\r\n\r\n"},
		{desc: "chunked", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{desc: "repeated fields", in: "GET / HTTP/1.1\r\nHost: a\r\nx-a: 1\r\nX-A: 2\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"},
		{desc: "connect", in: "CONNECT a:443 HTTP/1.1\r\n\r\n"},
		{desc: "h2c", in: "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\nHTTP2-Settings: x\r\n\r\n"},
		{desc: "leading empty line", in: "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "both lengths", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{desc: "obs fold", in: "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n"},
		{desc: "space before colon", in: "GET / HTTP/1.1\r\nHost: a\r\nX : a\r\n\r\n"},
		{desc: "bad escape", in: "GET /%zz HTTP/1.1\r\nHost: a\r\n\r\n"},
		{desc: "bare cr", in: "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			compareNetHTTP(t, []byte(tt.in))
		})
	}
}

func FuzzDifferential(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(compareNetHTTP)
}

// compareNetHTTP parses data with both parsers and fails where they
// disagree other than in the documented ways.
func compareNetHTTP(t *testing.T, data []byte) {
	var req httpmsg.Request
	_, f, err := ParseRequest(data, &req, Limits{MaxHeaderBytes: 1 << 20})
	if err == ErrIncomplete {
		return
	}
	greq, gerr := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
	switch {
	case err != nil:
		return // expected strictness, or both refuse
	case gerr != nil:
		if !acceptedOnly(data) {
			t.Fatalf("net/http refuses what we accept: %v\n%q", gerr, data)
		}
		return
	}
	if req.Method != greq.Method || req.Target != greq.RequestURI || req.Host != greq.Host ||
		req.ProtoMajor != greq.ProtoMajor || req.ProtoMinor != greq.ProtoMinor || req.Close != greq.Close {
		t.Fatalf("request line: ours %q %q %q 1.%d close=%v; net/http %q %q %q 1.%d close=%v",
			req.Method, req.Target, req.Host, req.ProtoMinor, req.Close,
			greq.Method, greq.RequestURI, greq.Host, greq.ProtoMinor, greq.Close)
	}
	if req.ContentLength != greq.ContentLength || f.Chunked != slices.Equal(greq.TransferEncoding, []string{"chunked"}) {
		t.Fatalf("body: ours %d chunked=%v; net/http %d %q", req.ContentLength, f.Chunked, greq.ContentLength, greq.TransferEncoding)
	}
	ours := canonical(req.Header)
	theirs := http.Header(greq.Header.Clone())
	for _, k := range []string{"Host", "Content-Length", "Transfer-Encoding"} {
		delete(theirs, k)
	}
	if f.H2CUpgrade {
		delete(theirs, "Upgrade")
		delete(theirs, "Http2-Settings")
	}
	// http.ReadRequest adds Cache-Control: no-cache for Pragma: no-cache.
	if ours["Cache-Control"] == nil && len(ours["Pragma"]) > 0 && ours["Pragma"][0] == "no-cache" {
		delete(theirs, "Cache-Control")
	}
	if len(ours) != len(theirs) {
		t.Fatalf("fields: ours %q, net/http %q", ours, theirs)
	}
	for k, v := range ours {
		if !slices.Equal(v, theirs[k]) {
			t.Fatalf("field %s: ours %q, net/http %q", k, v, theirs[k])
		}
	}
}

// canonical turns h into net/http's form, framing fields left out.
func canonical(h httpmsg.Header) http.Header {
	m := http.Header{}
	for _, f := range h {
		k := textproto.CanonicalMIMEHeaderKey(f.Name)
		if k != "Content-Length" && k != "Transfer-Encoding" {
			m[k] = append(m[k], f.Value)
		}
	}
	return m
}
