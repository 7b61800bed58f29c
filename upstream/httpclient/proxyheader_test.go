package httpclient

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	proxyproto "github.com/pires/go-proxyproto"
	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"
)

func TestWriteProxyHeader(t *testing.T) {
	t.Parallel()
	ap := netip.MustParseAddrPort
	tests := []struct {
		desc          string
		version       string
		client, local netip.AddrPort
		want          string // v1: the exact line; v2: "src dst" as parsed, or "LOCAL"
		err           bool
	}{
		{desc: "v1 IPv4", version: "v1", client: ap("1.2.3.4:1111"), local: ap("10.0.0.1:443"),
			want: "PROXY TCP4 1.2.3.4 10.0.0.1 1111 443\r\n"},
		{desc: "v1 IPv6", version: "v1", client: ap("[2001:db8::1]:1111"), local: ap("[2001:db8::2]:443"),
			want: "PROXY TCP6 2001:db8::1 2001:db8::2 1111 443\r\n"},
		{desc: "v1 IPv4-mapped client on a dual-stack listener", version: "v1", client: ap("[::ffff:1.2.3.4]:1111"), local: ap("[::ffff:10.0.0.1]:443"),
			want: "PROXY TCP4 1.2.3.4 10.0.0.1 1111 443\r\n"},
		{desc: "v1 unknown client", version: "v1", local: ap("10.0.0.1:443"), want: "PROXY UNKNOWN\r\n"},
		{desc: "v1 mixed families", version: "v1", client: ap("1.2.3.4:1"), local: ap("[2001:db8::2]:443"), want: "PROXY UNKNOWN\r\n"},
		{desc: "v2 IPv4", version: "v2", client: ap("1.2.3.4:1111"), local: ap("10.0.0.1:443"), want: "1.2.3.4:1111 10.0.0.1:443"},
		{desc: "v2 IPv6", version: "v2", client: ap("[2001:db8::1]:1111"), local: ap("[2001:db8::2]:443"), want: "[2001:db8::1]:1111 [2001:db8::2]:443"},
		{desc: "v2 unknown client", version: "v2", local: ap("10.0.0.1:443"), want: "LOCAL"},
		{desc: "no version", version: "", client: ap("1.2.3.4:1"), local: ap("10.0.0.1:443"), want: ""},
		{desc: "bad version", version: "v3", client: ap("1.2.3.4:1"), local: ap("10.0.0.1:443"), err: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := WriteProxyHeader(&buf, tc.version, tc.client, tc.local)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			got := buf.String()
			if tc.version == "v2" {
				got = describeV2(t, buf.Bytes())
			}
			if got != tc.want {
				t.Errorf("header %q, want %q", got, tc.want)
			}
		})
	}
}

// describeV2 parses a v2 header: "src dst", or "LOCAL".
func describeV2(t *testing.T, b []byte) string {
	t.Helper()
	h, err := proxyproto.Read(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatalf("parsing %x: %v", b, err)
	}
	if h.Version != 2 {
		t.Fatalf("version %d", h.Version)
	}
	if h.Command == proxyproto.LOCAL {
		return "LOCAL"
	}
	return h.SourceAddr.String() + " " + h.DestinationAddr.String()
}

// proxyUpstream is a server that requires a PROXY header on every
// connection and answers each request with "src dst" from that header,
// over HTTP/1.1 or h2c.
func proxyUpstream(t *testing.T, proto string) (string, func() int32) {
	addr, conns := rawUpstream(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		h, err := proxyproto.Read(br)
		if err != nil {
			t.Errorf("connection without a PROXY header: %v", err)
			return
		}
		who := h.SourceAddr.String() + " " + h.DestinationAddr.String()
		if proto == "h2c" {
			srv := &http2.Server{}
			srv.ServeConn(&bufConn{Conn: c, r: br}, &http2.ServeConnOpts{
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, who) }),
			})
			return
		}
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(who), who)
		}
	})
	return addr, conns.Load
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Each connection starts with a PROXY header for the client whose request
// opened it, and carries only that client's requests: a client's next
// request reuses its connection, another client gets its own.
func TestSendProxy(t *testing.T) {
	t.Parallel()
	ap := netip.MustParseAddrPort
	a, b := ap("192.0.2.1:1111"), ap("192.0.2.2:2222")
	v6 := ap("[2001:db8::7]:3333")
	local, local6 := ap("198.51.100.1:443"), ap("[2001:db8::1]:443")
	for _, proto := range []string{"http1", "h2c"} {
		for _, version := range []string{"v1", "v2"} {
			t.Run(proto+"/"+version, func(t *testing.T) {
				t.Parallel()
				addr, conns := proxyUpstream(t, proto)
				tr := newTestTransport(t, func(c *conf.Upstream) { c.Protocol, c.SendProxy = proto, version })
				steps := []struct{ client, local netip.AddrPort }{{a, local}, {a, local}, {b, local}, {a, local}, {v6, local6}, {b, local}}
				for i, s := range steps {
					_, body, err := doAll(tr, addr, &Request{Method: "GET", Target: "/", Host: "h", Client: s.client, Local: s.local, Ctx: context.Background()})
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if want := s.client.String() + " " + s.local.String(); body != want {
						t.Errorf("request %d from %v arrived on a connection for %q", i, s.client, body)
					}
				}
				if n := conns(); n != 3 {
					t.Errorf("%d connections for 3 clients, want 3", n)
				}
			})
		}
	}
}

func TestSendProxyUnknownClient(t *testing.T) {
	t.Parallel()
	addr, _ := rawUpstream(t, func(c net.Conn) {
		line, _ := bufio.NewReader(c).ReadString('\n')
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(line), line)
	})
	tr := newTestTransport(t, func(c *conf.Upstream) { c.SendProxy = "v1" })
	_, body, err := doAll(tr, addr, &Request{Method: "GET", Target: "/", Host: "h"})
	if err != nil || !strings.HasPrefix(body, "PROXY UNKNOWN\r\n") {
		t.Errorf("first line %q, %v; want PROXY UNKNOWN", body, err)
	}
}
