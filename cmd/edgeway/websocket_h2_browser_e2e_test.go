package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/websocket"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestWebSocketOverH2InChromium: chromium, having loaded a page over an
// HTTP/2 connection that advertised SETTINGS_ENABLE_CONNECT_PROTOCOL,
// opens its WebSocket on that connection with extended CONNECT (RFC
// 8441), and edgeway carries it to an HTTP/1.1 WebSocket echo upstream.
func TestWebSocketOverH2InChromium(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/echo", websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!doctype html><title>ws</title><p>page</p>")
	})
	up := httptest.NewServer(mux)
	t.Cleanup(up.Close)
	p, _, _ := startEdgeway(t, "tls { self_signed localhost }\nlisten sec { addr 127.0.0.1:0\n protocols tls http1 h2 }\n",
		map[string]string{"a.routes": fmt.Sprintf("upstream u { server %s }\nroute r { match PathPrefix(`/`)\n to u }\n", hostPort(up))})
	sec := p.Addrs(t, 2)["sec"]
	port := sec[strings.LastIndex(sec, ":")+1:]

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(testutil.Chromium(t)),
		chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	ctx, cancelRun := context.WithTimeout(ctx, stepTimeout)
	t.Cleanup(cancelRun)
	echo := `new Promise(resolve => {
		const ws = new WebSocket('wss://' + location.host + '/echo');
		const msg = 'over h2 '.repeat(20000);
		ws.onopen = () => ws.send(msg);
		let got = '';
		ws.onmessage = e => { got += e.data; if (got.length >= msg.length) { ws.close(); resolve(got === msg ? 'ok' : 'differs'); } };
		ws.onerror = () => resolve('error');
	})`
	if _, err := chromedp.Run(ctx, chromedp.Navigate("https://localhost:"+port+"/")); err != nil {
		t.Fatalf("chromium: loading the page: %v\n%s", err, p.Log())
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](echo, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, p.Log())
	}
	if got != "ok" {
		t.Fatalf("WebSocket echo in chromium: %s\n%s", got, p.Log())
	}
	// The WebSocket's request went over HTTP/2 (the page's connection),
	// and its tunnel ended with the page's close: the browser starts the
	// closing handshake and the server answers its Close frame and closes
	// its connection (RFC 6455 §7.1.1). Which end edgeway sees first is
	// a race between the two peers: the server's close (edgeway then
	// resets the stream rather than wait for chromium, which can wait
	// seconds) or chromium ending its stream once it has the server's
	// Close frame. Either way the tunnel ends within the bound, cleanly.
	p.WaitLog(t, `listener=sec protocol=HTTP/2 .*method=GET .*path=/echo .*status=200 `)
	p.WaitLog(t, `msg=tunnel log=access listener=sec kind=websocket .* route=r .* bytes_to_server=16\d{4} bytes_to_client=16\d{4} duration=[0-4]\.\d+ end=(server|client)_closed`)
}
