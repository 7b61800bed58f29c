package h1guard

import "testing"

// benchStream is a typical browser-like request head followed by a POST
// with a small body, as one keep-alive stream.
const benchStream = "GET /api/v1/items?page=2&sort=name HTTP/1.1\r\n" +
	"Host: api.example.com\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
	"Accept: application/json, text/plain, */*\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br\r\n" +
	"Referer: https://www.example.com/items\r\n" +
	"Cookie: session=0123456789abcdef0123456789abcdef; theme=dark\r\n" +
	"Connection: keep-alive\r\n\r\n" +
	"POST /api/v1/items HTTP/1.1\r\n" +
	"Host: api.example.com\r\n" +
	"Content-Type: application/json\r\n" +
	"Content-Length: 64\r\n\r\n" +
	`{"name":"widget","price":1999,"tags":["a","b","c"],"stock":42}` + "\r\n"

func BenchmarkGuard(b *testing.B) {
	p := []byte(benchStream)
	var g Guard
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if g.Filter(p) != len(p) {
			b.Fatal(g.Err())
		}
	}
}
