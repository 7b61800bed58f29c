package http1

import (
	"errors"
	"strings"
	"testing"
)

func TestParseResponse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc   string
		in     string
		want   Response // Header not compared
		fields int
		reason reason // 0: accepted
	}{
		{desc: "cl", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", fields: 1, want: Response{ProtoMinor: 1, Status: 200, Reason: "OK", ContentLength: 5}},
		{desc: "no reason no space", in: "HTTP/1.1 204\r\n\r\n", want: Response{ProtoMinor: 1, Status: 204, ContentLength: -1, NoBody: true}},
		{desc: "empty reason", in: "HTTP/1.1 299 \r\nContent-Length: 0\r\n\r\n", fields: 1, want: Response{ProtoMinor: 1, Status: 299, ContentLength: 0}},
		{desc: "reason with spaces", in: "HTTP/1.0 404 Not  Found\n\n", want: Response{Status: 404, Reason: "Not  Found", ContentLength: -1, Close: true, UntilClose: true}},
		{desc: "same cl twice", in: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", fields: 2, want: Response{ProtoMinor: 1, Status: 200, Reason: "OK", ContentLength: 2}},
		{desc: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", fields: 1, want: Response{ProtoMinor: 1, Status: 200, Reason: "OK", ContentLength: -1, Chunked: true}},
		{desc: "te and cl", in: "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", fields: 2, want: Response{ProtoMinor: 1, Status: 200, Reason: "OK", ContentLength: -1, Chunked: true, Close: true}},
		{desc: "close delimited", in: "HTTP/1.1 200 OK\r\n\r\n", want: Response{ProtoMinor: 1, Status: 200, Reason: "OK", ContentLength: -1, Close: true, UntilClose: true}},
		{desc: "connection close", in: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", fields: 2, want: Response{ProtoMinor: 1, Status: 200, Reason: "OK", Close: true}},
		{desc: "http10 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n", fields: 2, want: Response{Status: 200, Reason: "OK", ContentLength: 1}},
		{desc: "304 keeps cl", in: "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", fields: 1, want: Response{ProtoMinor: 1, Status: 304, Reason: "Not Modified", ContentLength: 9, NoBody: true}},
		{desc: "100 continue", in: "HTTP/1.1 100 Continue\r\n\r\n", want: Response{ProtoMinor: 1, Status: 100, Reason: "Continue", ContentLength: -1, NoBody: true}},
		{desc: "101", in: "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", fields: 2, want: Response{ProtoMinor: 1, Status: 101, Reason: "Switching Protocols", ContentLength: -1, NoBody: true}},
		{desc: "204 chunked has no body", in: "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n", fields: 1, want: Response{ProtoMinor: 1, Status: 204, Reason: "No Content", ContentLength: -1, NoBody: true}},
		{desc: "cl differs", in: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", reason: rContentLength},
		{desc: "cl list", in: "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n", reason: rContentLength},
		{desc: "te gzip", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", reason: rTransferEncoding},
		{desc: "te chunked not final", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", reason: rTransferEncoding},
		{desc: "te twice", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", reason: rTransferEncoding},
		{desc: "te on 1.0", in: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", reason: rTEHTTP10},
		{desc: "bare cr in value", in: "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", reason: rBareCR},
		{desc: "nul in value", in: "HTTP/1.1 200 OK\r\nX: a\x00\r\n\r\n", reason: rCtlByte},
		{desc: "obs fold", in: "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", reason: rObsFold},
		{desc: "space before colon", in: "HTTP/1.1 200 OK\r\nX : a\r\n\r\n", reason: rSpaceInName},
		{desc: "http2", in: "HTTP/2.0 200 OK\r\n\r\n", reason: rStatusLine},
		{desc: "two digit status", in: "HTTP/1.1 20 OK\r\n\r\n", reason: rStatusLine},
		{desc: "four digit status", in: "HTTP/1.1 2000 OK\r\n\r\n", reason: rStatusLine},
		{desc: "status below 100", in: "HTTP/1.1 099 X\r\n\r\n", reason: rStatusLine},
		{desc: "nul in reason", in: "HTTP/1.1 200 O\x00K\r\n\r\n", reason: rCtlByte},
		{desc: "not http", in: "SSH-2.0-OpenSSH", reason: rStatusLine},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			var resp Response
			b := []byte(tt.in + "BODY")
			n, err := ParseResponse(b, &resp, 0)
			if tt.reason != 0 {
				var e *Error
				if !errors.As(err, &e) || e.Status != 502 || e.Reason != reasonText[tt.reason] || n != 0 {
					t.Fatalf("n=%d err %v, want %q", n, err, reasonText[tt.reason])
				}
				return
			}
			if err != nil || n != len(tt.in) {
				t.Fatalf("n=%d err %v", n, err)
			}
			h := resp.Header
			resp.Header = nil
			if !equalResponse(resp, tt.want) || len(h) != tt.fields {
				t.Fatalf("got %+v %q\nwant %+v", resp, h, tt.want)
			}
			for i := range len(tt.in) - 1 {
				if _, err := ParseResponse(b[:i], &resp, 0); err != ErrIncomplete {
					t.Fatalf("prefix %d: %v", i, err)
				}
			}
		})
	}
}

func TestParseResponseTooLarge(t *testing.T) {
	t.Parallel()
	in := []byte("HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 100))
	var resp Response
	if _, err := ParseResponse(in, &resp, 64); err == nil || err.(*Error).Status != 502 {
		t.Fatalf("err %v", err)
	}
	if _, err := ParseResponse(in, &resp, 0); err != ErrIncomplete {
		t.Fatalf("err %v", err)
	}
}

func equalResponse(a, b Response) bool {
	return a.ProtoMinor == b.ProtoMinor && a.Status == b.Status && a.Reason == b.Reason &&
		a.ContentLength == b.ContentLength && a.Chunked == b.Chunked && a.Close == b.Close &&
		a.NoBody == b.NoBody && a.UntilClose == b.UntilClose
}
