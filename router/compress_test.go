package router

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/edgeway/edgeway/conf"
)

func decode(t *testing.T, coding string, b []byte) string {
	t.Helper()
	var r io.Reader
	switch coding {
	case "gzip":
		g, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		r = g
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		z, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		r = z
	default:
		return string(b)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decoding %s: %v", coding, err)
	}
	return string(out)
}

// TestCompressNegotiation: the coding follows Accept-Encoding's q-values
// among the route's algorithms; answers that must not be compressed go
// as they are.
func TestCompressNegotiation(t *testing.T) {
	t.Parallel()
	page := strings.Repeat("<p>edgeway compresses this page</p>\n", 300)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<p>tiny</p>")
			return
		case "/png":
			w.Header().Set("Content-Type", "image/png")
		case "/no-transform":
			w.Header().Set("Cache-Control", "no-transform")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		w.Header().Set("ETag", `"v1"`)
		io.WriteString(w, page)
	}))
	t.Cleanup(up.Close)
	rt := testRoute(t, "site", "PathPrefix(`/`)", "u")
	rt.Compress = &conf.Compress{Algorithms: []string{"zstd", "br", "gzip"}, Types: conf.DefaultCompressTypes, MinSize: 1024}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{rt},
	}
	_, fe := front(t, cfg, Options{})
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	for _, tc := range []struct {
		desc, method, path, accept, rng string
		coding, vary                    string
	}{
		{"gzip", "GET", "/", "gzip", "", "gzip", "Accept-Encoding"},
		{"browser: br preferred", "GET", "/", "gzip, deflate, br, zstd", "", "zstd", "Accept-Encoding"},
		{"q-values", "GET", "/", "gzip;q=0.5, br;q=0.9, zstd;q=0", "", "br", "Accept-Encoding"},
		{"star", "GET", "/", "*;q=0.1, zstd;q=0", "", "br", "Accept-Encoding"},
		{"identity only", "GET", "/", "identity", "", "", "Accept-Encoding"},
		{"no Accept-Encoding", "GET", "/", "", "", "", "Accept-Encoding"},
		{"HEAD", "HEAD", "/", "gzip", "", "", "Accept-Encoding"},
		{"Range", "GET", "/", "gzip", "bytes=0-10", "", "Accept-Encoding"},
		{"small", "GET", "/small", "gzip", "", "", "Accept-Encoding"},
		{"not a listed type", "GET", "/png", "gzip", "", "", ""},
		{"no-transform", "GET", "/no-transform", "gzip", "", "", "Accept-Encoding"},
	} {
		req := newReq(t, tc.method, fe.URL+tc.path, "Accept-Encoding", tc.accept)
		if tc.accept == "" {
			req.Header.Del("Accept-Encoding")
		}
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		resp, body := do(t, c, req)
		got := resp.Header.Get("Content-Encoding")
		if got != tc.coding || resp.Header.Get("Vary") != tc.vary {
			t.Errorf("%s: coding %q vary %q, want %q %q", tc.desc, got, resp.Header.Get("Vary"), tc.coding, tc.vary)
			continue
		}
		if tc.coding != "" {
			if d := decode(t, tc.coding, []byte(body)); d != page {
				t.Errorf("%s: decoded %d bytes that differ from the %d sent", tc.desc, len(d), len(page))
			}
			if len(body) >= len(page)/4 || resp.Header.Get("ETag") != `W/"v1"` || resp.Header.Get("Content-Length") != "" {
				t.Errorf("%s: %d bytes for %d, ETag %q, Content-Length %q", tc.desc, len(body), len(page), resp.Header.Get("ETag"), resp.Header.Get("Content-Length"))
			}
		}
	}
}

// TestCompressedEventStream: a compressed event stream is flushed per
// event: the first event arrives while the upstream still holds the
// stream open.
func TestCompressedEventStream(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
	}))
	t.Cleanup(func() { close(release); up.Close() })
	rt := testRoute(t, "events", "PathPrefix(`/`)", "u")
	rt.Compress = &conf.Compress{Algorithms: []string{"gzip"}, Types: conf.DefaultCompressTypes, MinSize: 1024}
	cfg := &conf.Config{
		Listeners: []conf.Listener{testListener()},
		Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})},
		Routes:    []conf.Route{rt},
	}
	_, fe := front(t, cfg, Options{})
	req := newReq(t, "GET", fe.URL+"/", "Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(zr).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first event %q, %v", line, err)
	}
}

func TestCodingQ(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		accept, coding string
		want           float64
	}{
		{"gzip", "gzip", 1},
		{"GZIP;q=0.4", "gzip", 0.4},
		{"br;q=0", "br", 0},
		{"*", "zstd", 1},
		{"*;q=0.2, zstd;q=0.9", "zstd", 0.9},
		{"", "gzip", 0},
		{"deflate", "gzip", 0},
	} {
		if got := codingQ(c.accept, c.coding); got != c.want {
			t.Errorf("codingQ(%q, %q) = %v, want %v", c.accept, c.coding, got, c.want)
		}
	}
}

// BenchmarkCompressedResponse is the router's cost of a 10 KiB HTML
// answer per coding (the upstream in process).
func BenchmarkCompressedResponse(b *testing.B) {
	page := strings.Repeat("<p>edgeway compresses this page</p>\n", 300)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, page)
	}))
	defer up.Close()
	for _, coding := range []string{"identity", "gzip", "br", "zstd"} {
		b.Run(coding, func(b *testing.B) {
			rt := testRoute(b, "site", "PathPrefix(`/`)", "u")
			rt.Compress = &conf.Compress{Algorithms: []string{"zstd", "br", "gzip"}, Types: conf.DefaultCompressTypes, MinSize: 1024}
			_, fe := front(b, &conf.Config{Listeners: []conf.Listener{testListener()},
				Upstreams: []conf.Upstream{testUpstream("u", []string{addr(up)})}, Routes: []conf.Route{rt}}, Options{})
			c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			b.ReportAllocs()
			var n int
			for b.Loop() {
				req := newReq(b, "GET", fe.URL+"/", "Accept-Encoding", coding)
				_, body := do(b, c, req)
				n = len(body)
			}
			b.ReportMetric(float64(n), "bytes/response")
		})
	}
}
