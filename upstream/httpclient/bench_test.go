package httpclient

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// fastUpstream answers every request with a 100-byte body, reading heads
// line by line, so that the client's cost dominates the benchmark.
func fastUpstream(b *testing.B) string {
	resp := "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: text/plain\r\n\r\n" + strings.Repeat("x", 100)
	addr, _ := rawUpstream(b, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) <= 2 {
					break
				}
			}
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
	return addr
}

// BenchmarkRoundTrip compares this transport with http.Transport on a GET
// with a 100-byte answer, one connection, body read to EOF.
func BenchmarkRoundTrip(b *testing.B) {
	addr := fastUpstream(b)
	cfg := conf.Upstream{Name: "u", Servers: []conf.Server{{Addr: addr, Weight: 1}},
		ConnectTimeout: time.Second, ResponseTimeout: 5 * time.Second, IdleTimeout: time.Minute, MaxIdleConns: 4}
	for _, bc := range []struct {
		desc string
		rt   http.RoundTripper
	}{
		{desc: "httpclient.Transport", rt: NewTransport(cfg)},
		{desc: "http.Transport", rt: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true,
			ResponseHeaderTimeout: 5 * time.Second, IdleConnTimeout: time.Minute}},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
			req.Header.Set("User-Agent", "")
			req.Header.Set("Accept", "*/*")
			buf := make([]byte, 512)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := bc.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
		})
	}
}
