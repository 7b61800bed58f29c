package http1

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// browserRequest is a typical browser navigation: 12 fields, ~500 bytes.
const browserRequest = "GET /articles/2024/edge-proxies?page=2&sort=new HTTP/1.1\r\n" +
	"Host: www.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Referer: https://www.example.com/articles\r\n" +
	"Connection: keep-alive\r\n" +
	"Cookie: session=4f2a9c81e7; theme=dark; _ga=GA1.2.12345\r\n" +
	"Upgrade-Insecure-Requests: 1\r\n" +
	"Sec-Fetch-Dest: document\r\n" +
	"Sec-Fetch-Mode: navigate\r\n" +
	"Priority: u=0, i\r\n\r\n"

func BenchmarkParseRequest(b *testing.B) {
	in := []byte(browserRequest)
	req := httpmsg.Request{Header: make(httpmsg.Header, 0, 16)}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseRequest(in, &req, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNetHTTPReadRequest is the reader ParseRequest replaces, for
// comparison.
func BenchmarkNetHTTPReadRequest(b *testing.B) {
	r := strings.NewReader(browserRequest)
	br := bufio.NewReader(r)
	b.SetBytes(int64(len(browserRequest)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(browserRequest)
		br.Reset(r)
		if _, err := http.ReadRequest(br); err != nil {
			b.Fatal(err)
		}
	}
}

const typicalResponse = "HTTP/1.1 200 OK\r\n" +
	"Date: Mon, 27 Jul 2026 12:28:53 GMT\r\n" +
	"Server: Apache\r\n" +
	"Content-Type: text/html; charset=utf-8\r\n" +
	"Content-Length: 5120\r\n" +
	"Cache-Control: max-age=600\r\n" +
	"ETag: \"34aa387-d-1568eb00\"\r\n" +
	"Vary: Accept-Encoding\r\n\r\n"

func BenchmarkParseResponse(b *testing.B) {
	in := []byte(typicalResponse)
	resp := Response{Header: make(httpmsg.Header, 0, 16)}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseResponse(in, &resp, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkChunked(b *testing.B) {
	var body []byte
	chunk := make([]byte, 4096)
	for range 16 {
		body = append(append(AppendChunkHeader(body, len(chunk)), chunk...), "\r\n"...)
	}
	body, _ = AppendLastChunk(body, httpmsg.Header{{Name: "T", Value: "v"}})
	c := Chunked{Trailer: make(httpmsg.Header, 0, 2), TrailerBuf: make([]byte, 0, 64)}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		c.Reset()
		for i := 0; !c.Done(); {
			n, _, err := c.Next(body[i:])
			if err != nil {
				b.Fatal(err)
			}
			i += n
		}
	}
}
