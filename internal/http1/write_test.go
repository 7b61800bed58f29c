package http1

import (
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

func TestAppendStatusLine(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]string{200: "HTTP/1.1 200 OK\r\n", 101: "HTTP/1.1 101 Switching Protocols\r\n", 599: "HTTP/1.1 599 \r\n"} {
		if got := string(AppendStatusLine(nil, status)); got != want {
			t.Errorf("AppendStatusLine(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestAppendRequestHead(t *testing.T) {
	t.Parallel()
	h := httpmsg.Header{{Name: "Host", Value: "evil"}, {Name: "Content-Length", Value: "9"}, {Name: "Trailer", Value: "T"}, {Name: "User-Agent", Value: ""}, {Name: "Accept", Value: "*/*"}}
	tests := []struct {
		desc                 string
		method, target, host string
		h                    httpmsg.Header
		cl                   int64
		want                 string
		err                  error
	}{
		{desc: "get", target: "/a?b", host: "h", h: h, want: "GET /a?b HTTP/1.1\r\nHost: h\r\nAccept: */*\r\n\r\n"},
		{desc: "post empty", method: "POST", target: "/", host: "h", want: "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"},
		{desc: "head empty", method: "HEAD", target: "/", host: "h", want: "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n"},
		{desc: "put cl", method: "PUT", target: "/", host: "h", cl: 12, want: "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n\r\n"},
		{desc: "chunked keeps trailer", method: "POST", target: "/", host: "h", h: h, cl: -1, want: "POST / HTTP/1.1\r\nHost: h\r\nTrailer: T\r\nAccept: */*\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{desc: "options star", method: "OPTIONS", target: "*", host: "h", want: "OPTIONS * HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"},
		{desc: "connect", method: "CONNECT", target: "a:443", host: "a:443", want: "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\nContent-Length: 0\r\n\r\n"},
		{desc: "star for get", target: "*", host: "h", err: ErrBadTarget},
		{desc: "absolute form", target: "http://a/", host: "h", err: ErrBadTarget},
		{desc: "space in target", target: "/a b", host: "h", err: ErrBadTarget},
		{desc: "crlf in target", target: "/\r\nX: y", host: "h", err: ErrBadTarget},
		{desc: "bad method", method: "G T", target: "/", host: "h", err: ErrBadMethod},
		{desc: "bad host", target: "/", host: "h\r\nX: y", err: ErrBadHost},
		{desc: "crlf in value", target: "/", host: "h", h: httpmsg.Header{{Name: "X", Value: "a\nb"}}, err: ErrBadField},
		{desc: "bad length", target: "/", host: "h", cl: -2, err: ErrBadLength},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got, err := AppendRequestHead(nil, tt.method, tt.target, tt.host, tt.h, tt.cl)
			if err != tt.err || string(got) != tt.want {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

func TestAppendChunks(t *testing.T) {
	t.Parallel()
	b := append(AppendChunkHeader(nil, 17), "hello, world!!!!!\r\n"...)
	b, err := AppendLastChunk(b, httpmsg.Header{{Name: "T", Value: "v"}, {Name: "Content-Length", Value: "1"}})
	want := "11\r\nhello, world!!!!!\r\n0\r\nT: v\r\n\r\n"
	if err != nil || string(b) != want {
		t.Fatalf("got %q, %v", b, err)
	}
	var c Chunked
	data, n, err := decodeAll(&c, string(b), 0)
	if err != nil || n != len(b) || data != "hello, world!!!!!" || c.Trailer.Get("t") != "v" {
		t.Fatalf("decoded %q %d %v %q", data, n, err, c.Trailer)
	}
	if _, err := AppendLastChunk(nil, httpmsg.Header{{Name: "T", Value: "\x00"}}); err != ErrBadField {
		t.Fatalf("err %v", err)
	}
}
