package http1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// echoUpstream is a loopback server that echoes each connection's bytes
// until the peer half-closes.
func echoUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// tunnelHandler answers 101 and tunnels to an echo upstream; the
// upstream's first bytes (pre) are "up:".
func tunnelHandler(t *testing.T) httpmsg.Handler {
	up := echoUpstream(t)
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		uc, err := net.Dial("tcp", up)
		if err != nil {
			t.Error(err)
			return
		}
		if err := w.WriteHead(http.StatusSwitchingProtocols, httpmsg.Header{{Name: "Upgrade", Value: "echo"}}, -1); err != nil {
			t.Error(err)
		}
		if err := w.Tunnel(uc, []byte("up:")); err != nil {
			t.Error(err)
		}
	})
}

// TestUpgradeTunnel checks that a tunnel carries bytes both ways,
// including those sent in the same write as the upgrade request and those
// the handler had already read from the upstream.
func TestUpgradeTunnel(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, tunnelHandler(t))
	c := dial(t, ts)
	// Bytes after the head are tunnel data, not HTTP.
	early := "\x00\x01 not http\r\n\n\r POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n"+early)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols || res.Header.Get("Upgrade") != "echo" {
		t.Fatalf("response %v, %v", res, err)
	}
	want := "up:" + early
	got := make([]byte, len(want))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
		t.Fatalf("echoed %q, %v", got, err)
	}
	io.WriteString(c, "later")
	got = got[:5]
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "later" {
		t.Fatalf("echoed %q, %v", got, err)
	}
	c.(*net.TCPConn).CloseWrite()
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after half-close: %q, %v", rest, err)
	}
}

func TestUpgradeRefusedCloses(t *testing.T) {
	t.Parallel()
	const upgrade = "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n"
	tests := []struct {
		desc    string
		handler httpmsg.HandlerFunc
		raw     string
	}{
		{
			desc:    "explicit 404",
			handler: func(w httpmsg.ResponseWriter, r *httpmsg.Request) { reply(w, http.StatusNotFound, "no") },
			raw:     upgrade,
		},
		{
			desc:    "implicit 200",
			handler: func(w httpmsg.ResponseWriter, r *httpmsg.Request) {},
			raw:     upgrade,
		},
		{
			desc: "streamed 200",
			handler: func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
				w.WriteHead(http.StatusOK, nil, -1)
				io.WriteString(w, "raw")
			},
			raw: upgrade,
		},
		{
			desc:    "connect answered 403",
			handler: func(w httpmsg.ResponseWriter, r *httpmsg.Request) { w.WriteHead(http.StatusForbidden, nil, 0) },
			raw:     "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			ts := start(t, Config{}, tt.handler)
			// A second request after the upgrade one must never be parsed.
			out, closed := roundTrip(t, ts, tt.raw+"GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
			res := readResponses(t, out)
			if !closed || len(res) != 1 || !res[0].Close {
				t.Fatalf("closed=%v %q", closed, out)
			}
		})
	}
}

func TestH2CUpgradeNotTunneled(t *testing.T) {
	t.Parallel()
	ts := start(t, Config{}, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		reply(w, http.StatusOK, "upgrade="+r.Header.Get("Upgrade")+" settings="+r.Header.Get("Http2-Settings")+
			" connection="+r.Header.Get("Connection"))
	}))
	out, closed := roundTrip(t, ts, "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n"+
		"Connection: Upgrade, HTTP2-Settings, x-keep\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"+
		"GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	res := readResponses(t, out)
	if !closed || len(res) != 1 || !res[0].Close {
		t.Fatalf("closed=%v %q", closed, out)
	}
	if got := bodyOf(res[0]); got != "upgrade= settings= connection=x-keep" {
		t.Fatalf("handler saw %q", got)
	}
}

// smuggled is a request that must never reach a handler: both lengths.
const smuggled = "POST /smuggled HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"

// TestNoBypass sends requests that once switched the framing guard off
// for the rest of the connection, each followed by a request with both
// lengths, and checks that the handler never sees the smuggled request.
func TestNoBypass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		h2c     bool
		handler httpmsg.HandlerFunc
		first   string
	}{
		{desc: "PRI line without the rest of the preface", h2c: true, first: "PRI * HTTP/2.0\r\nHost: a\r\n\r\n"},
		{desc: "HTTP/2 preface on an http1-only listener", first: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{desc: "OPTIONS * with Upgrade", first: "OPTIONS * HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\n\r\n"},
		{desc: "101 written without a tunnel", first: "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n",
			handler: func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
				w.WriteHead(http.StatusSwitchingProtocols, httpmsg.Header{{Name: "Upgrade", Value: "x"}}, -1)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			var bad atomic.Int32
			var cfg Config
			if tc.h2c {
				cfg.H2C = func(c net.Conn) { t.Error("handed to h2c") }
			}
			ts := start(t, cfg, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
				if r.Path() == "/smuggled" {
					bad.Add(1)
				}
				if tc.handler != nil {
					tc.handler(w, r)
				}
			}))
			out, closed := roundTrip(t, ts, tc.first+smuggled)
			if !closed {
				t.Fatalf("connection left open; got %q", out)
			}
			if n := bad.Load(); n != 0 || strings.Contains(out, "smuggled") {
				t.Fatalf("the smuggled request was served %d times; got %q", n, out)
			}
		})
	}
}
