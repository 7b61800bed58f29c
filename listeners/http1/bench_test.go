package http1

import (
	"io"
	"net/http"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/engine"
)

// benchServe measures one Serve call per request: the client writes a
// request, Serve reads, answers and parks, the client reads the answer.
// Allocations are the server's: the client reuses its buffers.
func benchServe(b *testing.B, req string, h httpmsg.Handler) {
	client, server := testutil.TCPPair(b)
	s := New(Config{Handler: h})
	c := &engine.Conn{Conn: server}
	raw := []byte(req)
	resp := make([]byte, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := client.Write(raw); err != nil {
			b.Fatal(err)
		}
		if act := s.Serve(c); act != engine.Park {
			b.Fatalf("Serve: %v", act)
		}
		if _, err := client.Read(resp); err != nil {
			b.Fatal(err)
		}
	}
}

var benchBody = []byte("hello, world\n")

func fixedHandler() httpmsg.Handler {
	h := httpmsg.Header{{Name: "Content-Type", Value: "text/plain"}}
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		w.WriteHead(http.StatusOK, h, int64(len(benchBody)))
		w.Write(benchBody)
	})
}

// BenchmarkGet is a typical browser GET answered with a small fixed body.
func BenchmarkGet(b *testing.B) {
	benchServe(b, "GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\n"+
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0\r\n"+
		"Accept: text/html,application/xhtml+xml\r\nAccept-Language: en-US,en;q=0.5\r\n"+
		"Accept-Encoding: gzip, deflate, br\r\nCookie: session=0123456789abcdef\r\n\r\n", fixedHandler())
}

// BenchmarkPostChunked posts a small chunked body the handler reads.
func BenchmarkPostChunked(b *testing.B) {
	buf := make([]byte, 512)
	h := fixedHandler()
	benchServe(b, "POST /api HTTP/1.1\r\nHost: example.com\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		for {
			if _, err := r.Body.Read(buf); err == io.EOF {
				break
			} else if err != nil {
				b.Error(err)
				return
			}
		}
		h.ServeProxy(w, r)
	}))
}

// BenchmarkPipelined sends four requests in one write; one Serve call
// answers them all.
func BenchmarkPipelined(b *testing.B) {
	const get = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"
	benchServe(b, get+get+get+get, fixedHandler())
}
