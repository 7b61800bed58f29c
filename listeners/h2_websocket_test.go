package listeners

import (
	"encoding/base64"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/testutil"
)

// WebSocket over HTTP/2 (RFC 8441) through the own HTTP/2 server and the
// router to HTTP/1.1 WebSocket upstreams (ws_helpers_test.go).

// Messages both ways, up to 3 MiB (past the stream's 256 KiB and the
// connection's 1 MiB windows), on two streams of one connection, after
// SETTINGS_ENABLE_CONNECT_PROTOCOL.
func TestH2WebSocketEcho(t *testing.T) {
	wsTransports(t, func(t *testing.T, e *wsEnv) {
		h := dialWSH2(t, e)
		h.waitFor("the server's SETTINGS", func() bool { return h.gotSet })
		h.mu.Lock()
		v, ok := h.settings[http2.SettingEnableConnectProtocol]
		h.mu.Unlock()
		if !ok || v != 1 {
			t.Fatalf("SETTINGS_ENABLE_CONNECT_PROTOCOL = %d (sent: %v), want 1", v, ok)
		}
		st := h.open(1, "ws.test", "/echo", "sec-websocket-protocol", "chat")
		if st.status != "200" {
			t.Fatalf("extended CONNECT answered %q (reset %v), want 200", st.status, st.reset)
		}
		if st.header.Get("sec-websocket-accept") != "" || st.header.Get("upgrade") != "" {
			t.Errorf("200 carries HTTP/1-only fields: %v", st.header)
		}
		// Small messages both ways, then ones far beyond the stream's and
		// the connection's windows (256 KiB and 1 MiB).
		for _, msg := range []string{"hello", "world", strings.Repeat("x", 70000), strings.Repeat("0123456789", 300<<10)} {
			done := make(chan struct{})
			go func() {
				defer close(done)
				defer panics.Recover("ws sender")
				h.sendMsg(st, msg)
			}()
			if got := st.readMsg(t, len(msg)); got != msg {
				t.Fatalf("echo of %d bytes differs (%d bytes back)", len(msg), len(got))
			}
			<-done
		}
		// A second stream on the same connection, routed by path.
		tag := h.open(3, "ws.test", "/tag")
		if tag.status != "200" {
			t.Fatalf("/tag answered %q, want 200", tag.status)
		}
		h.sendMsg(tag, "hi")
		if got := tag.readMsg(t, len("tag:hi")); got != "tag:hi" {
			t.Fatalf("/tag echo %q, want tag:hi", got)
		}
		h.sendMsg(st, "still")
		if got := st.readMsg(t, 5); got != "still" {
			t.Fatalf("first stream after the second opened: %q", got)
		}
	})
}

// The client's END_STREAM half-closes the upstream: the echo server
// (io.Copy) sees the end and closes, which ends the stream both ways.
func TestH2WebSocketClientClose(t *testing.T) {
	wsTransports(t, func(t *testing.T, e *wsEnv) {
		h := dialWSH2(t, e)
		st := h.open(1, "ws.test", "/echo")
		if st.status != "200" {
			t.Fatalf("answered %q, want 200", st.status)
		}
		h.sendMsg(st, "bye")
		if got := st.readMsg(t, 3); got != "bye" {
			t.Fatalf("echo %q", got)
		}
		h.send(st, nil, true)
		h.waitFor("the stream's end", func() bool { return st.ended || st.isRst })
		if st.isRst && st.reset != http2.ErrCodeNo {
			t.Fatalf("stream reset with %v after the client's END_STREAM, want END_STREAM", st.reset)
		}
		// The connection still serves.
		st2 := h.open(3, "ws.test", "/echo")
		if st2.status != "200" {
			t.Fatalf("next stream answered %q", st2.status)
		}
	})
}

// The client's RST_STREAM closes the upstream connection, and the
// tunnel is no longer open.
func TestH2WebSocketClientReset(t *testing.T) {
	wsTransports(t, func(t *testing.T, e *wsEnv) {
		h := dialWSH2(t, e)
		st := h.open(1, "ws.test", "/echo")
		if st.status != "200" {
			t.Fatalf("answered %q, want 200", st.status)
		}
		h.sendMsg(st, "x")
		st.readMsg(t, 1)
		if e.echoOn.Load() != 1 {
			t.Fatalf("%d WebSockets open upstream, want 1", e.echoOn.Load())
		}
		h.mu.Lock()
		h.fr.WriteRSTStream(1, http2.ErrCodeCancel)
		h.mu.Unlock()
		testutil.WaitFor(t, "the upstream WebSocket closed", func() bool { return e.echoOn.Load() == 0 })
		testutil.WaitFor(t, "the tunnel's access line", func() bool {
			return len(e.access.lines("msg=tunnel")) == 1
		})
		if l := e.access.lines("msg=tunnel")[0]; !strings.Contains(l, "kind=websocket") || !strings.Contains(l, "end=client_closed") ||
			!strings.Contains(l, "route=echo") || !strings.Contains(l, "bytes_to_client=3 ") {
			t.Errorf("tunnel line %q, want a websocket on route echo the client closed, 3 bytes to it", l)
		}
	})
}

// The upstream closing ends the stream: a WebSocket close from the
// server (the tag upstream closes when its handler returns on a close
// frame from the client), END_STREAM, and RST_STREAM NO_ERROR since the
// client did not end its side.
func TestH2WebSocketUpstreamClose(t *testing.T) {
	wsTransports(t, func(t *testing.T, e *wsEnv) {
		h := dialWSH2(t, e)
		st := h.open(1, "ws.test", "/tag")
		if st.status != "200" {
			t.Fatalf("answered %q, want 200", st.status)
		}
		h.send(st, wsFrame(0x8, []byte{0x03, 0xe8}), false) // close, 1000
		for {
			op, _, err := st.readFrame()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("after the close: %v, want the stream's end", err)
			}
			if op != 0x8 {
				t.Fatalf("opcode %d after the close, want 8", op)
			}
		}
		// END_STREAM, then RST_STREAM NO_ERROR: the upstream is gone, so
		// the client is asked to stop rather than waited for.
		h.waitFor("END_STREAM and RST_STREAM", func() bool { return st.ended && st.isRst })
		if st.reset != http2.ErrCodeNo {
			t.Fatalf("stream reset with %v after the upstream's end, want NO_ERROR", st.reset)
		}
		testutil.WaitFor(t, "the tunnel's access line", func() bool {
			return len(e.access.lines("end=server_closed")) == 1
		})
	})
}

// An upstream that answers the handshake with other than 101 is passed
// on as its status; no route is 404; a host or path no rule matches is
// 404 too.
func TestH2WebSocketRefusals(t *testing.T) {
	wsTransports(t, func(t *testing.T, e *wsEnv) {
		h := dialWSH2(t, e)
		cases := []struct {
			desc, authority, path, want string
		}{
			{desc: "upstream refuses", authority: "ws.test", path: "/refuse", want: "403"},
			{desc: "no route for the path", authority: "ws.test", path: "/none", want: "404"},
			{desc: "no route for the host", authority: "other.test", path: "/echo", want: "404"},
		}
		for i, tc := range cases {
			st := h.open(uint32(2*i+1), tc.authority, tc.path)
			if st.status != tc.want {
				t.Errorf("%s: answered %q (reset %v), want %s", tc.desc, st.status, st.reset, tc.want)
			}
			h.waitFor("the answer's end", func() bool { return st.ended || st.isRst })
		}
		// A :protocol other than websocket is not served.
		st := h.openWith(7, ":method", "CONNECT", ":protocol", "connect-udp", ":scheme", "https", ":path", "/echo", ":authority", "ws.test")
		if st.status != "501" {
			t.Errorf("connect-udp: answered %q (reset %v), want 501", st.status, st.reset)
		}
		// Without :path an extended CONNECT is malformed (RFC 8441 §4).
		st = h.openWith(9, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":authority", "ws.test")
		if !st.isRst || st.reset != http2.ErrCodeProtocol {
			t.Errorf("no :path: answered %q (reset %v), want RST_STREAM PROTOCOL_ERROR", st.status, st.reset)
		}
		// :protocol on a GET is malformed.
		st = h.openWith(11, ":method", "GET", ":protocol", "websocket", ":scheme", "https", ":path", "/echo", ":authority", "ws.test")
		if !st.isRst || st.reset != http2.ErrCodeProtocol {
			t.Errorf(":protocol on GET: answered %q (reset %v), want RST_STREAM PROTOCOL_ERROR", st.status, st.reset)
		}
		// A plain CONNECT (no :protocol) is answered as before this
		// change: 400, never tunneled.
		st = h.openWith(13, ":method", "CONNECT", ":authority", "ws.test:443")
		if st.status != "400" {
			t.Errorf("plain CONNECT: answered %q (reset %v), want 400", st.status, st.reset)
		}
		if n := e.echoOn.Load(); n != 0 {
			t.Errorf("%d WebSockets reached the echo upstream, want none", n)
		}
	})
}

// The upstream gets the HTTP/1.1 handshake the extended CONNECT stands
// for, with a key made by edgeway and the client's WebSocket fields;
// its 101 becomes a 200 with its subprotocol, and a 101 whose accept
// does not answer the key is 502. A header rule picks the route.
func TestH2WebSocketHandshake(t *testing.T) {
	wsTransports(t, func(t *testing.T, e *wsEnv) {
		h := dialWSH2(t, e)
		st := h.open(1, "ws.test", "/hs/ok?q=1", "sec-websocket-protocol", "chat, superchat",
			"sec-websocket-extensions", "permessage-deflate", "sec-websocket-key", "client's own")
		if st.status != "200" || st.header.Get("sec-websocket-protocol") != "chat" {
			t.Fatalf("answered %q %v, want 200 with sec-websocket-protocol chat", st.status, st.header)
		}
		if got := make([]byte, 9); func() bool { _, err := io.ReadFull(st.br, got); return err != nil }() || string(got) != "raw bytes" {
			t.Fatalf("bytes after the 101: %q, want %q", got, "raw bytes")
		}
		e.mu.Lock()
		r := e.handshake
		e.mu.Unlock()
		key := r.Header.Get("Sec-WebSocket-Key")
		raw, _ := base64.StdEncoding.DecodeString(key)
		switch {
		case r.Method != "GET" || r.Proto != "HTTP/1.1" || r.URL.RequestURI() != "/hs/ok?q=1" || r.Host != "ws.test":
			t.Errorf("upstream got %s %s %s Host %s, want GET /hs/ok?q=1 HTTP/1.1 Host ws.test", r.Method, r.URL.RequestURI(), r.Proto, r.Host)
		case !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !strings.EqualFold(r.Header.Get("Connection"), "upgrade"):
			t.Errorf("upstream got Upgrade %q Connection %q", r.Header.Get("Upgrade"), r.Header.Get("Connection"))
		case len(raw) != 16 || len(r.Header.Values("Sec-WebSocket-Key")) != 1:
			t.Errorf("upstream got Sec-WebSocket-Key %q, want one of 16 random bytes", r.Header.Values("Sec-WebSocket-Key"))
		case r.Header.Get("Sec-WebSocket-Version") != "13" || r.Header.Get("Sec-WebSocket-Protocol") != "chat, superchat" ||
			r.Header.Get("Sec-WebSocket-Extensions") != "permessage-deflate":
			t.Errorf("upstream got the WebSocket fields %v", r.Header)
		}
		bad := h.open(3, "ws.test", "/hs/bad")
		if bad.status != "502" {
			t.Errorf("a 101 with the wrong accept: answered %q (reset %v), want 502", bad.status, bad.reset)
		}
		tag := h.open(5, "ws.test", "/echo", "x-route", "tag")
		if tag.status != "200" {
			t.Fatalf("header route: answered %q", tag.status)
		}
		h.sendMsg(tag, "m")
		if got := tag.readMsg(t, 5); got != "tag:m" {
			t.Fatalf("header route reached %q, want the tag upstream", got)
		}
	})
}

// x/net's server (h2_server xnet) does not serve extended CONNECT: it
// does not advertise it, and resets a stream that tries.
func TestH2WebSocketNotOnXnet(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		e := startWSEnvOn(t, overTLS, "xnet", nil)
		h := dialWSH2(t, e)
		h.waitFor("the server's SETTINGS", func() bool { return h.gotSet })
		h.mu.Lock()
		v, ok := h.settings[http2.SettingEnableConnectProtocol]
		h.mu.Unlock()
		if ok {
			t.Errorf("tls %v: x/net advertises SETTINGS_ENABLE_CONNECT_PROTOCOL = %d", overTLS, v)
		}
		st := h.open(1, "ws.test", "/echo")
		if !st.isRst || st.reset != http2.ErrCodeProtocol {
			t.Errorf("tls %v: extended CONNECT answered %q (reset %v), want RST_STREAM PROTOCOL_ERROR", overTLS, st.status, st.reset)
		}
		if n := e.echoOn.Load(); n != 0 {
			t.Errorf("%d WebSockets reached the upstream", n)
		}
	}
}

// TestH2WebSocketIdleCost measures an open, quiet WebSocket over HTTP/2
// (EDGEWAY_WS_COST=1): heap and goroutines per tunnel, the echo
// upstream's and the test client's included.
func TestH2WebSocketIdleCost(t *testing.T) {
	if os.Getenv("EDGEWAY_WS_COST") == "" {
		t.Skip("set EDGEWAY_WS_COST=1 to measure")
	}
	e := startWSEnv(t, false)
	h := dialWSH2(t, e)
	const n = 200
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	for i := 0; i < n; i++ {
		st := h.open(uint32(2*i+1), "ws.test", "/echo")
		if st.status != "200" {
			t.Fatalf("stream %d: %q", i, st.status)
		}
		h.sendMsg(st, "x")
		st.readMsg(t, 1)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	t.Logf("per open WebSocket over HTTP/2: %.1f KiB heap, %.1f goroutines (upstream and client included)",
		float64(after.HeapInuse-before.HeapInuse)/n/1024, float64(runtime.NumGoroutine()-g0)/n)
	// Echo throughput on one tunnel, the upstream and client included.
	st := h.open(uint32(2*n+1), "ws.test", "/echo")
	msg := strings.Repeat("z", 256<<10)
	const rounds = 64
	start := time.Now()
	go func() {
		defer panics.Recover("ws cost sender")
		for i := 0; i < rounds; i++ {
			h.sendMsg(st, msg)
		}
	}()
	for i := 0; i < rounds; i++ {
		st.readMsg(t, len(msg))
	}
	d := time.Since(start)
	t.Logf("echo of %d MiB each way on one tunnel: %v, %.0f MiB/s", rounds*len(msg)>>20, d.Round(time.Millisecond), float64(rounds*len(msg)>>20)/d.Seconds())
	if p := os.Getenv("EDGEWAY_WS_HEAP"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		pprof.WriteHeapProfile(f)
		f.Close()
	}
}

// A reload that removes a WebSocket's route drains it after
// tunnel_drain: the stream is reset (CANCEL), the upstream closed, and
// the line says drained.
func TestH2WebSocketDrained(t *testing.T) {
	e := startWSEnv(t, false)
	h := dialWSH2(t, e)
	st := h.open(1, "ws.test", "/echo")
	if st.status != "200" {
		t.Fatalf("answered %q", st.status)
	}
	h.sendMsg(st, "x")
	st.readMsg(t, 1)
	cc := *e.cc
	cc.Routes = slices.DeleteFunc(slices.Clone(cc.Routes), func(r conf.Route) bool { return r.Name == "echo" })
	cc.TunnelDrain = time.Millisecond
	if err := e.rt.Apply(&cc); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the stream's reset", func() bool { return st.isRst })
	if st.reset != http2.ErrCodeCancel {
		t.Errorf("drained stream reset with %v, want CANCEL", st.reset)
	}
	testutil.WaitFor(t, "the upstream WebSocket closed", func() bool { return e.echoOn.Load() == 0 })
	testutil.WaitFor(t, "the drained line", func() bool { return len(e.access.lines("end=drained")) == 1 })
}

// A client that gives no window: the upstream's bytes wait in no buffer
// of edgeway's beyond its read, and past stream_stall_timeout the stream
// is reset and the upstream connection closed.
func TestH2WebSocketStalledClient(t *testing.T) {
	e := startWSEnvOn(t, false, "own", func(l *conf.Listener) { l.H2.StreamStallTimeout = 200 * time.Millisecond })
	h := dialWSH2Window(t, e, 0)
	st := h.open(1, "ws.test", "/echo")
	if st.status != "200" {
		t.Fatalf("answered %q", st.status)
	}
	h.sendMsg(st, "no room for the echo")
	h.waitFor("the stalled stream's reset", func() bool { return st.isRst })
	if st.reset != http2.ErrCodeCancel {
		t.Errorf("reset with %v, want CANCEL", st.reset)
	}
	testutil.WaitFor(t, "the upstream WebSocket closed", func() bool { return e.echoOn.Load() == 0 })
	testutil.WaitFor(t, "the tunnel's line", func() bool { return len(e.access.lines("msg=tunnel")) == 1 })
	if l := e.access.lines("msg=tunnel")[0]; !strings.Contains(l, "bytes_to_client=0 ") || !strings.Contains(l, "end=error") {
		t.Errorf("tunnel line %q, want nothing carried to the client and end=error", l)
	}
}
