package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/testutil"
)

// refusalSite is edgeway with the default cleartext listener web
// (http1 h2c), a TLS listener websecure (http1 h2 h3) and an admin API,
// routing everything to one upstream that counts what reaches it.
type refusalSite struct {
	*adminEdgeway
	secure, quic string // websecure's TCP and UDP addresses
	ca           *testutil.CA
	reached      *atomic.Int32
}

func startRefusalSite(t *testing.T, mainExtra string) *refusalSite {
	t.Helper()
	var reached atomic.Int32
	up := backend(t, "up")
	inner := up.Config.Handler
	up.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1); inner.ServeHTTP(w, r) })
	ca := testutil.NewCA(t, "refusals CA")
	cert, key := ca.IssueFiles(t, t.TempDir(), testutil.IssueOptions{}, "site.test")
	port := testutil.FreePort(t)
	e := startAdmin(t, fmt.Sprintf(`log { access on; format text; output stderr }
tls { cert %s %s default }
listen websecure {
  addr 127.0.0.1:%d
  protocols tls http1 h2 h3
  read_header_timeout 2s
}
%s`, cert, key, port, mainExtra), map[string]string{"r.routes": "upstream u { server " + hostPort(up) + " }\n" +
		"route r {\n  match PathPrefix(`/`)\n  to u\n}\n"})
	addrs := e.p.Addrs(t, 2+strings.Count(mainExtra, "listen "))
	return &refusalSite{adminEdgeway: e, secure: addrs["websecure"], quic: e.p.QUICAddrs(t, 1)["websecure"], ca: ca, reached: &reached}
}

// seen waits for the refusal's access-log line and its count. status 0:
// the line must have no status field.
func (s *refusalSite) seen(t *testing.T, listener, proto string, status int, reason string, count int) {
	t.Helper()
	st := ""
	if status != 0 {
		st = fmt.Sprintf("status=%d ", status)
	}
	s.p.WaitLog(t, `msg=refused log=access listener=`+listener+` protocol=`+regexp.QuoteMeta(proto)+` client=127\.0\.0\.1:\d+ `+st+`reason=`+reason+`\n`)
	sample := `edgeway_requests_refused_total{listener="` + listener + `",protocol="` + proto + `",reason="` + reason + `"}`
	want := fmt.Sprint(count)
	testutil.WaitFor(t, sample+" = "+want, func() bool { return s.metric(t, sample) == want })
}

// h2Client is an HTTP/2 client (x/net's Transport) whose connections all
// go to addr, over TLS when tc is set (h2), else in clear text (h2c);
// dials counts the connections it opened.
func h2Client(addr string, tc *tls.Config, dials *atomic.Int32) *http.Client {
	tr := &http2.Transport{AllowHTTP: tc == nil,
		DialTLSContext: func(ctx context.Context, network, _ string, _ *tls.Config) (net.Conn, error) {
			dials.Add(1)
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil || tc == nil {
				return c, err
			}
			cfg := tc.Clone()
			cfg.NextProtos = []string{"h2"}
			t := tls.Client(c, cfg)
			return t, t.HandshakeContext(ctx)
		}}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestRefusalsSeenHTTP2: over h2c and h2, a header list over
// max_header_bytes gets 431 on its stream and the next request on the
// same connection is served; a Host that is not an authority gets 400.
// Each gets its access-log line and count, and none reaches the upstream.
//
// web and websecure run edgeway's own HTTP/2 server (the default),
// xnetweb and xnetsec x/net's (h2_server xnet): the same holds on both.
func TestRefusalsSeenHTTP2(t *testing.T) {
	s := startRefusalSite(t, refusalXnetListeners)
	xnet := s.p.Addrs(t, 4)
	for _, c := range []struct {
		desc, listener, url string
		addr                string
		tls                 *tls.Config
	}{
		{desc: "h2c", listener: "web", url: "http://a.test/", addr: strings.TrimPrefix(s.base, "http://")},
		{desc: "h2", listener: "websecure", url: "https://site.test/", addr: s.secure, tls: &tls.Config{RootCAs: s.ca.Pool, ServerName: "site.test"}},
		{desc: "xnet h2c", listener: "xnetweb", url: "http://a.test/", addr: xnet["xnetweb"]},
		{desc: "xnet h2", listener: "xnetsec", url: "https://site.test/", addr: xnet["xnetsec"], tls: &tls.Config{RootCAs: s.ca.Pool, ServerName: "site.test"}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var dials atomic.Int32
			cl := h2Client(c.addr, c.tls, &dials)
			before := s.reached.Load()
			req, _ := http.NewRequest("GET", c.url+"big", nil)
			req.Header.Set("X-Big", strings.Repeat("b", 40<<10))
			if code := statusOf(t, cl, req); code != http.StatusRequestHeaderFieldsTooLarge {
				t.Errorf("40 KiB header: status %d, want 431", code)
			}
			s.seen(t, c.listener, "HTTP/2", 431, "request_head_too_large", 1)
			req, _ = http.NewRequest("GET", c.url+"after", nil)
			if code := statusOf(t, cl, req); code != http.StatusOK {
				t.Errorf("the request after the 431: status %d, want 200", code)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%d connections, want 1: the 431 must keep the connection", n)
			}
			req, _ = http.NewRequest("GET", c.url, nil)
			req.Host = "[::1"
			if code := statusOf(t, cl, req); code != http.StatusBadRequest {
				t.Errorf("Host [::1: status %d, want 400", code)
			}
			s.seen(t, c.listener, "HTTP/2", 400, "invalid_host", 1)
			if n := s.reached.Load() - before; n != 1 {
				t.Errorf("the upstream saw %d requests, want only the one after the 431", n)
			}
		})
	}
}

// refusalXnetListeners are an h2c and a TLS listener on x/net's HTTP/2
// server (h2_server xnet), for startRefusalSite.
const refusalXnetListeners = "listen xnetweb {\n  addr 127.0.0.1:0\n  protocols http1 h2c\n  h2_server xnet\n}\n" +
	"listen xnetsec {\n  addr 127.0.0.1:0\n  protocols tls http1 h2\n  h2_server xnet\n}\n"

// statusOf sends req with c and returns the response status.
func statusOf(t *testing.T, c *http.Client, req *http.Request) int {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestRefusalsSeenHTTP2Errors: stream and connection errors an HTTP/2
// client causes are lines (no status: none is sent) and counts: a request
// without :path (RST_STREAM PROTOCOL_ERROR, by x/net), a
// connection-specific field (GOAWAY PROTOCOL_ERROR, by the guard) and a
// header list over four times max_header_bytes (GOAWAY
// ENHANCE_YOUR_CALM, by the guard).
//
// web runs edgeway's own HTTP/2 server (the default), xnetweb x/net's
// behind the guard: they answer the same, except that a
// connection-specific field is a stream error on the own server
// (RST_STREAM PROTOCOL_ERROR, as RFC 9113 §8.2.2 has it) where the guard
// ends the connection (GOAWAY).
func TestRefusalsSeenHTTP2Errors(t *testing.T) {
	s := startRefusalSite(t, refusalXnetListeners)
	for _, front := range []struct{ listener, addr string }{
		{"web", strings.TrimPrefix(s.base, "http://")},
		{"xnetweb", s.p.Addrs(t, 4)["xnetweb"]},
	} {
		t.Run(front.listener, func(t *testing.T) { testRefusalsHTTP2Errors(t, s, front.listener, front.addr) })
	}
	if n := s.reached.Load(); n != 0 {
		t.Errorf("the upstream saw %d requests, want none", n)
	}
}

func testRefusalsHTTP2Errors(t *testing.T, s *refusalSite, listener, addr string) {
	xnet := listener == "xnetweb"
	get := []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "a.test"}}
	for _, c := range []struct {
		desc   string
		fields []hpack.HeaderField
		goAway bool
		code   http2.ErrCode
		reason string
		count  int // the reason's count once this case is through
	}{
		{desc: "no :path", fields: get, code: http2.ErrCodeProtocol, reason: "malformed_request", count: 1},
		{desc: "upper-case field name", fields: append(append(get[:3:3], hpack.HeaderField{Name: ":path", Value: "/"}), hpack.HeaderField{Name: "X-Up", Value: "1"}),
			code: http2.ErrCodeProtocol, reason: "malformed_request", count: 2},
		{desc: "control byte in a value", fields: append(append(get[:3:3], hpack.HeaderField{Name: ":path", Value: "/"}), hpack.HeaderField{Name: "x-ctl", Value: "a\x01b"}),
			code: http2.ErrCodeProtocol, reason: "malformed_request", count: 3},
		{desc: "pseudo-header after a field", fields: append(append(get[:3:3], hpack.HeaderField{Name: "x-a", Value: "1"}), hpack.HeaderField{Name: ":path", Value: "/"}),
			code: http2.ErrCodeProtocol, reason: "malformed_request", count: 4},
		{desc: "connection field", fields: append(append(get[:3:3], hpack.HeaderField{Name: ":path", Value: "/"}), hpack.HeaderField{Name: "connection", Value: "close"}),
			goAway: xnet, code: http2.ErrCodeProtocol, reason: "connection_specific_header", count: 1},
		{desc: "header list over 4x the limit", fields: append(append(get[:3:3], hpack.HeaderField{Name: ":path", Value: "/"}), hpack.HeaderField{Name: "x-big", Value: strings.Repeat("b", 200<<10)}),
			goAway: true, code: http2.ErrCodeEnhanceYourCalm, reason: "request_head_too_large", count: 1},
	} {
		t.Run(c.desc, func(t *testing.T) {
			fr := h2Raw(t, addr)
			h2Headers(t, fr, 1, c.fields)
			goAway, code := h2End(t, fr, 1)
			if goAway != c.goAway || code != c.code {
				t.Errorf("got goaway %v code %v, want goaway %v code %v", goAway, code, c.goAway, c.code)
			}
			s.seen(t, listener, "HTTP/2", 0, c.reason, c.count)
		})
	}
}

// h2Raw opens an h2c connection and exchanges the prefaces.
func h2Raw(t *testing.T, addr string) *http2.Framer {
	t.Helper()
	c := testutil.DialRaw(t, addr)
	io.WriteString(c, http2.ClientPreface)
	fr := http2.NewFramer(c, c)
	fr.MaxHeaderListSize = 1 << 20
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return fr
}

// h2Headers sends fields as one header block (HEADERS and as many
// CONTINUATION frames as it takes) that ends stream id.
func h2Headers(t *testing.T, fr *http2.Framer, id uint32, fields []hpack.HeaderField) {
	t.Helper()
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range fields {
		enc.WriteField(f)
	}
	block := buf.Bytes()
	const max = 16 << 10
	first := block[:min(len(block), max)]
	block = block[len(first):]
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: true, EndHeaders: len(block) == 0}); err != nil {
		t.Fatal(err)
	}
	for len(block) > 0 {
		frag := block[:min(len(block), max)]
		block = block[len(frag):]
		if err := fr.WriteContinuation(id, len(block) == 0, frag); err != nil {
			return // the server may close before it has read it all
		}
	}
}

// h2End reads frames until stream id is reset or the connection gets a
// GOAWAY, and returns which it was and its error code.
func h2End(t *testing.T, fr *http2.Framer, id uint32) (bool, http2.ErrCode) {
	t.Helper()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("no RST_STREAM or GOAWAY: %v", err)
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return false, f.ErrCode
			}
		case *http2.GoAwayFrame:
			return true, f.ErrCode
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			t.Fatalf("stream %d answered: the request was not refused", f.StreamID)
		}
	}
}
