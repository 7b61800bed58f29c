package listeners

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestUpgradeTunnel(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer nc.Close()
		io.WriteString(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n")
		io.Copy(nc, brw) // echo until the client half-closes
	}))
	c := dial(t, s)
	// Bytes after the head are tunnel data, not HTTP: the guard must not
	// refuse them.
	tunnel := "\x00\x01 not http\r\n\n\r POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n"+tunnel)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("response %v, %v", res, err)
	}
	got := make([]byte, len(tunnel))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != tunnel {
		t.Fatalf("echoed %q, %v", got, err)
	}
}

func TestUpgradeRefusedCloses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		handler http.HandlerFunc
		raw     string
	}{
		{
			desc:    "explicit 404",
			handler: func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
			raw:     "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
		},
		{
			desc:    "implicit 200",
			handler: func(w http.ResponseWriter, r *http.Request) {},
			raw:     "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
		},
		{
			desc: "write through Unwrap",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.(interface{ Unwrap() http.ResponseWriter }).Unwrap().Write([]byte("raw"))
			},
			raw: "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
		},
		{
			desc:    "connect answered 403",
			handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusForbidden) },
			raw:     "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			s := start(t, testConfig(), tt.handler)
			// A second request after the upgrade one must never be parsed.
			out, closed := exchange(t, s, tt.raw+"GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
			res := readResponses(t, out)
			if !closed || len(res) != 1 {
				t.Fatalf("closed=%v %q", closed, out)
			}
			if tt.desc != "write through Unwrap" && !res[0].Close {
				t.Fatalf("no Connection: close in %q", out)
			}
		})
	}
}

func TestH2CUpgradeNotTunneled(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "upgrade="+r.Header.Get("Upgrade")+" settings="+r.Header.Get("Http2-Settings")+
			" connection="+strings.Join(r.Header["Connection"], ","))
	}))
	out, closed := exchange(t, s, "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: h2c\r\n"+
		"Connection: Upgrade, HTTP2-Settings, x-keep\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
	res := readResponses(t, out)
	if !closed || len(res) != 1 || !res[0].Close {
		t.Fatalf("closed=%v %q", closed, out)
	}
	if got := body(res[0]); got != "upgrade= settings= connection=x-keep" {
		t.Fatalf("handler saw %q", got)
	}
}
