package httpclient

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// headRecorder is a raw HTTP/1.1 server that records every request head
// it parses, in order, with the connection count, and answers 200.
type headRecorder struct {
	mu     sync.Mutex
	heads  []*http.Request
	bodies []string
}

func (h *headRecorder) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		h.mu.Lock()
		h.heads = append(h.heads, req)
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

func (h *headRecorder) seen() ([]*http.Request, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*http.Request(nil), h.heads...), append([]string(nil), h.bodies...)
}

// doAll sends req and reads the whole response body.
func doAll(tr *Transport, addr string, req *Request) (*Response, string, error) {
	var resp Response
	if err := tr.Do(addr, req, &resp); err != nil {
		return nil, "", err
	}
	var b []byte
	if resp.Body != nil {
		var err error
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return &resp, string(b), err
		}
	}
	return &resp, string(b), nil
}

// A field that is not valid HTTP is never written to a server, on either
// protocol: the request fails with a *RequestError (400) and the next
// request on the same transport is the first thing the server reads.
func TestInvalidFieldsNeverSent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		field httpmsg.Field
	}{
		{desc: "CRLF in value", field: httpmsg.Field{Name: "X-A", Value: "1\r\nX-Injected: 1"}},
		{desc: "LF in value", field: httpmsg.Field{Name: "X-A", Value: "1\nX-Injected: 1"}},
		{desc: "CR in value", field: httpmsg.Field{Name: "X-A", Value: "1\rX"}},
		{desc: "NUL in value", field: httpmsg.Field{Name: "X-A", Value: "a\x00b"}},
		{desc: "DEL in value", field: httpmsg.Field{Name: "X-A", Value: "a\x7fb"}},
		{desc: "space in name", field: httpmsg.Field{Name: "Bad Name", Value: "1"}},
		{desc: "colon in name", field: httpmsg.Field{Name: "X-A:", Value: "1"}},
		{desc: "pseudo-header name", field: httpmsg.Field{Name: ":path", Value: "/admin"}},
		{desc: "empty name", field: httpmsg.Field{Name: "", Value: "1"}},
		{desc: "CRLF in name", field: httpmsg.Field{Name: "X-A\r\nX-B", Value: "1"}},
		{desc: "trailing space in Transfer-Encoding name", field: httpmsg.Field{Name: "Transfer-Encoding ", Value: "chunked"}},
	}
	for _, proto := range []string{"http1", "h2c"} {
		for _, tc := range tests {
			t.Run(proto+"/"+tc.desc, func(t *testing.T) {
				t.Parallel()
				var addr string
				var seen func() []string
				if proto == "h2c" {
					srv := newH2CServer(t, echoHandler)
					addr, seen = srv.addr, srv.paths
				} else {
					rec := &headRecorder{}
					addr, _ = rawUpstream(t, rec.serve)
					seen = func() []string {
						heads, _ := rec.seen()
						var p []string
						for _, h := range heads {
							p = append(p, h.URL.Path)
						}
						return p
					}
				}
				tr := newTestTransport(t, func(c *conf.Upstream) { c.Protocol = proto })
				bad := &Request{Method: "GET", Target: "/bad", Host: "h", Header: httpmsg.Header{tc.field}}
				_, _, err := doAll(tr, addr, bad)
				var re *RequestError
				if !errors.As(err, &re) || re.Status != 400 {
					t.Fatalf("error %v, want a *RequestError with status 400", err)
				}
				if _, _, err := doAll(tr, addr, &Request{Method: "GET", Target: "/good", Host: "h"}); err != nil {
					t.Fatal(err)
				}
				if got := seen(); strings.Join(got, ",") != "/good" {
					t.Errorf("server saw requests %q, want only /good", got)
				}
			})
		}
	}
}

// The HTTP/1.1 writer frames the body itself: framing and Host fields in
// the request's list never reach the wire as given.
func TestFramingFieldsRewritten(t *testing.T) {
	t.Parallel()
	rec := &headRecorder{}
	addr, _ := rawUpstream(t, rec.serve)
	tr := newTestTransport(t, nil)
	req := &Request{Method: "POST", Target: "/", Host: "real.example", ContentLength: 3,
		Body: strings.NewReader("abc"),
		Header: httpmsg.Header{
			{Name: "Transfer-Encoding", Value: "chunked"},
			{Name: "transfer-encoding", Value: "gzip, chunked"},
			{Name: "Content-Length", Value: "100"},
			{Name: "Host", Value: "evil.example"},
			{Name: "Trailer", Value: "X-Sum"},
		}}
	if _, _, err := doAll(tr, addr, req); err != nil {
		t.Fatal(err)
	}
	heads, bodies := rec.seen()
	if len(heads) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(heads))
	}
	h := heads[0]
	if h.Host != "real.example" || h.ContentLength != 3 || len(h.TransferEncoding) != 0 ||
		h.Header.Get("Trailer") != "" || bodies[0] != "abc" {
		t.Errorf("server saw Host %q, Content-Length %d, Transfer-Encoding %q, Trailer %q, body %q; want real.example, 3, none, none, abc",
			h.Host, h.ContentLength, h.TransferEncoding, h.Header.Get("Trailer"), bodies[0])
	}
}

// FuzzH2Header checks the HTTP/2 field mapping: whatever it accepts holds
// no byte that could end a field, and no connection-specific field.
func FuzzH2Header(f *testing.F) {
	f.Add("X-A", "1")
	f.Add("Connection", "close")
	f.Add("TE", "trailers, deflate")
	f.Add("X-A", "1\r\nX: 2")
	f.Add("Upgrade", "websocket")
	f.Fuzz(func(t *testing.T, name, value string) {
		cp := newStringCopier(0)
		out, err := h2Header("a:1", httpmsg.Header{{Name: name, Value: value}}, &cp)
		if err != nil {
			var re *RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RequestError", err)
			}
			return
		}
		for k, vv := range out {
			if strings.ContainsAny(k, "\r\n\x00: ") || h2Skip(k) || httpmsg.EqualFold(k, "Upgrade") {
				t.Fatalf("field %q sent", k)
			}
			for _, v := range vv {
				if strings.ContainsAny(v, "\r\n\x00") {
					t.Fatalf("value %q sent", v)
				}
				if httpmsg.EqualFold(k, "TE") && v != "trailers" {
					t.Fatalf("TE %q sent", v)
				}
			}
		}
	})
}
