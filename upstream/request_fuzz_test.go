package upstream

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"testing"
)

// FuzzWriteHead checks that whatever a client puts into the method, target,
// Host and a header, writeHead either refuses it or writes exactly one
// request head that a strict parser reads back with the same values: no
// input can inject a second request or a header line toward the upstream.
func FuzzWriteHead(f *testing.F) {
	f.Add("GET", "/a?b=c", "example.com", "X-Test", "v")
	f.Add("POST", "/x%20y", "a:80", "X-A", "1\r\nX-Injected: 1")
	f.Add("GET", "/\r\nGET /smuggled HTTP/1.1", "h", "K", "v")
	f.Add("GE T", "/", "h\r\nX: y", "Bad Name", "v")
	f.Fuzz(func(t *testing.T, method, target, host, name, value string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		req := &http.Request{Method: method, URL: u, Host: host, Header: http.Header{name: {value}}}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := writeHead(w, req, false); err != nil {
			return
		}
		w.Flush()
		raw := buf.Bytes()
		br := bufio.NewReader(bytes.NewReader(raw))
		got, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("wrote a head Go cannot read (%v):\n%q", err, raw)
		}
		if rest, _ := io.ReadAll(br); len(rest) != 0 {
			t.Fatalf("bytes after the head: %q\nhead: %q", rest, raw)
		}
		want := method
		if want == "" {
			want = "GET" // as net/http: an empty method means GET
		}
		if got.Method != want || got.Host != host {
			t.Fatalf("read back method %q host %q, wrote %q %q:\n%q", got.Method, got.Host, req.Method, host, raw)
		}
		if k := http.CanonicalHeaderKey(name); !excluded(k) && k != "User-Agent" && got.Header.Get(k) != textproto.TrimString(value) {
			t.Fatalf("header %q read back as %q, wrote %q:\n%q", k, got.Header.Get(k), value, raw)
		}
	})
}
