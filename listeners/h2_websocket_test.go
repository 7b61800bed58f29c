package listeners

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/net/websocket"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
)

// WebSocket over HTTP/2 (RFC 8441) through the listener's own HTTP/2
// server and the router, to HTTP/1.1 WebSocket upstreams
// (x/net/websocket servers), over h2c and over TLS.

// wsEnv is a listener whose router sends ws.test/echo to an echo
// upstream (to the tag upstream with X-Route: tag), ws.test/tag to one
// that prefixes "tag:", ws.test/hs to one that records the handshake
// and answers a 101 itself, ws.test/refuse to a plain HTTP server that
// answers 403, and nothing else anywhere.
type wsEnv struct {
	addr      string
	tls       *tls.Config // the client's; nil: h2c
	rt        *router.Router
	cc        *conf.Config // the configuration applied
	ca        *testutil.CA
	echoOn    atomic.Int64 // the echo upstream's open WebSockets
	mu        sync.Mutex
	handshake *http.Request // the last handshake the hs upstream took
	access    *wsLog        // the router's access log
}

// wsLog is a log the router writes from its goroutines.
type wsLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *wsLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *wsLog) lines(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ln := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(ln, sub) {
			out = append(out, ln)
		}
	}
	return out
}

func startWSEnv(t *testing.T, overTLS bool) *wsEnv {
	t.Helper()
	return startWSEnvOn(t, overTLS, "own", nil)
}

// startWSEnvOn is startWSEnv with the listener's h2_server, and tune
// (when set) applied to its settings.
func startWSEnvOn(t *testing.T, overTLS bool, h2Server string, tune func(*conf.Listener)) *wsEnv {
	t.Helper()
	e := &wsEnv{access: &wsLog{}}
	echo := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) {
		e.echoOn.Add(1)
		defer e.echoOn.Add(-1)
		io.Copy(c, c)
	}))
	t.Cleanup(echo.Close)
	tag := httptest.NewServer(websocket.Handler(func(c *websocket.Conn) {
		var msg string
		for websocket.Message.Receive(c, &msg) == nil {
			websocket.Message.Send(c, "tag:"+msg)
		}
	}))
	t.Cleanup(tag.Close)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.handshake = r.Clone(r.Context())
		e.mu.Unlock()
		accept := wsAccept(r.Header.Get("Sec-WebSocket-Key"))
		if r.URL.Path == "/hs/bad" {
			accept = wsAccept("not the key sent")
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
			"Sec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: chat\r\n\r\nraw bytes", accept)
		brw.Flush()
	}))
	t.Cleanup(hs.Close)
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no websocket here", http.StatusForbidden)
	}))
	t.Cleanup(refuse.Close)

	cfg := testConfig()
	cfg.Name, cfg.H2Server = "web", h2Server
	if tune != nil {
		tune(&cfg)
	}
	up := func(name string, s *httptest.Server) conf.Upstream {
		return conf.Upstream{Name: name, ConnectTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second,
			IdleTimeout: 5 * time.Second, MaxIdleConns: 4, Servers: []conf.Server{{Addr: s.Listener.Addr().String(), Weight: 1}}}
	}
	route := func(name, text, upstream string) conf.Route {
		r, err := rule.Parse(rule.HTTP, text)
		if err != nil {
			t.Fatal(err)
		}
		return conf.Route{Name: name, Rule: r, RuleText: text, Priority: r.DefaultPriority(), Upstream: upstream}
	}
	cc := &conf.Config{Listeners: []conf.Listener{cfg},
		Upstreams: []conf.Upstream{up("echo", echo), up("tag", tag), up("refuse", refuse), up("hs", hs)},
		Routes: []conf.Route{
			route("hs", "Host(`ws.test`) && PathPrefix(`/hs`)", "hs"),
			route("echo-tag", "Host(`ws.test`) && PathPrefix(`/echo`) && Header(`X-Route`, `tag`)", "tag"),
			route("echo", "Host(`ws.test`) && PathPrefix(`/echo`)", "echo"),
			route("tag", "Host(`ws.test`) && PathPrefix(`/tag`)", "tag"),
			route("refuse", "Host(`ws.test`) && PathPrefix(`/refuse`)", "refuse"),
		}}
	rt := router.New(router.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AccessLog: slog.New(slog.NewTextHandler(e.access, nil))})
	if err := rt.Apply(cc); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	t.Cleanup(rt.Close)
	e.rt, e.cc = rt, cc
	if !overTLS {
		cfg.Protocols = []string{"http1", "h2c"}
		e.addr = start(t, cfg, rt.Proxy("web")).Addr().String()
		return e
	}
	ca := testutil.NewCA(t, "ws CA")
	e.ca = ca
	cfg.Protocols = []string{"tls", "http1", "h2"}
	s, err := ListenWith(cfg, rt.Proxy("web"), slog.New(slog.NewTextHandler(io.Discard, nil)),
		Options{TLS: &tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "ws.test")}}})
	if err != nil {
		t.Fatal(err)
	}
	e.addr = serve(t, s).Addr().String()
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	e.tls = &tls.Config{RootCAs: pool, ServerName: "ws.test", NextProtos: []string{"h2"}}
	return e
}

// wsH2 is a client of one HTTP/2 connection that opens WebSocket
// streams with extended CONNECT. A reader goroutine takes the frames:
// each stream's DATA goes to a pipe its WebSocket frames are read from,
// and is given back to the windows at once; the client's own DATA waits
// for the server's windows.
type wsH2 struct {
	t        *testing.T
	c        net.Conn
	fr       *http2.Framer
	mu       sync.Mutex // the framer's writes and what follows
	cond     sync.Cond  // window or stream state changed
	enc      *hpack.Encoder
	hbuf     bytes.Buffer
	settings map[http2.SettingID]uint32
	gotSet   bool
	connWin  int64
	initWin  int64
	streams  map[uint32]*wsStream
	readErr  error
	credit   bool // DATA is given back to the server's windows
}

// wsStream is one extended CONNECT as the client sees it.
type wsStream struct {
	id     uint32
	status string
	header http.Header
	win    int64
	pr     *io.PipeReader
	pw     *io.PipeWriter
	br     *bufio.Reader
	ended  bool          // END_STREAM from the server
	reset  http2.ErrCode // with isRst
	isRst  bool
	body   []byte // a non-200 answer's body
}

func dialWSH2(t *testing.T, e *wsEnv) *wsH2 {
	t.Helper()
	return dialWSH2Window(t, e, 1<<20)
}

// dialWSH2Window is dialWSH2 with the client's initial stream window;
// with 0 it never gives the server any window.
func dialWSH2Window(t *testing.T, e *wsEnv, win uint32) *wsH2 {
	t.Helper()
	var c net.Conn = testutil.DialRaw(t, e.addr)
	if e.tls != nil {
		tc := tls.Client(c, e.tls)
		tc.SetDeadline(time.Now().Add(testTimeoutWS))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			t.Fatalf("ALPN chose %q, want h2", p)
		}
		tc.SetDeadline(time.Time{})
		c = tc
	}
	h := &wsH2{t: t, c: c, credit: win > 0, settings: map[http2.SettingID]uint32{}, connWin: 65535, initWin: 65535, streams: map[uint32]*wsStream{}}
	h.cond.L = &h.mu
	h.fr = http2.NewFramer(c, bufio.NewReader(c))
	h.fr.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	h.enc = hpack.NewEncoder(&h.hbuf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: win})
	if win > 0 {
		h.fr.WriteWindowUpdate(0, 1<<24)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		h.mu.Lock()
		for _, s := range h.streams {
			s.pr.Close() // a reader blocked on a pipe write returns
		}
		h.mu.Unlock()
		c.Close()
		<-done
	})
	go func() {
		defer close(done)
		defer panics.Recover("ws h2 client reader")
		h.readLoop()
	}()
	return h
}

const testTimeoutWS = 10 * time.Second

func (h *wsH2) readLoop() {
	for {
		f, err := h.fr.ReadFrame()
		h.mu.Lock()
		if err != nil {
			h.readErr = err
			for _, s := range h.streams {
				s.pw.CloseWithError(err)
			}
			h.cond.Broadcast()
			h.mu.Unlock()
			return
		}
		h.onFrame(f)
		h.cond.Broadcast()
		h.mu.Unlock()
	}
}

// onFrame acts on one server frame; h.mu is held. DATA goes to its
// pipe outside the lock's hold on the writer side: the pipe's reader is
// the test, which may wait on h.cond, so the write happens unlocked.
func (h *wsH2) onFrame(f http2.Frame) {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if f.IsAck() {
			return
		}
		f.ForeachSetting(func(s http2.Setting) error {
			h.settings[s.ID] = s.Val
			if s.ID == http2.SettingInitialWindowSize {
				for _, st := range h.streams {
					st.win += int64(s.Val) - h.initWin
				}
				h.initWin = int64(s.Val)
			}
			return nil
		})
		h.gotSet = true
		h.fr.WriteSettingsAck()
	case *http2.PingFrame:
		if !f.IsAck() {
			h.fr.WritePing(true, f.Data)
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			h.connWin += int64(f.Increment)
		} else if st := h.streams[f.StreamID]; st != nil {
			st.win += int64(f.Increment)
		}
	case *http2.MetaHeadersFrame:
		st := h.streams[f.StreamID]
		if st == nil {
			return
		}
		if s := f.PseudoValue("status"); s != "" && s[0] != '1' {
			st.status = s
			st.header = http.Header{}
			for _, hf := range f.RegularFields() {
				st.header.Add(hf.Name, hf.Value)
			}
		}
		if f.StreamEnded() {
			st.ended = true
			st.pw.Close()
		}
	case *http2.DataFrame:
		st := h.streams[f.StreamID]
		if st == nil {
			return
		}
		if n := len(f.Data()); n > 0 && h.credit {
			h.fr.WriteWindowUpdate(0, uint32(n))
			h.fr.WriteWindowUpdate(f.StreamID, uint32(n))
		}
		if st.status != "200" {
			st.body = append(st.body, f.Data()...)
		} else if len(f.Data()) > 0 {
			data := bytes.Clone(f.Data())
			h.mu.Unlock()
			st.pw.Write(data)
			h.mu.Lock()
		}
		if f.StreamEnded() {
			st.ended = true
			st.pw.Close()
		}
	case *http2.RSTStreamFrame:
		if st := h.streams[f.StreamID]; st != nil {
			st.isRst, st.reset = true, f.ErrCode
			st.pw.CloseWithError(fmt.Errorf("stream reset: %v", f.ErrCode))
		}
	}
}

// open sends an extended CONNECT for path on authority, with extra
// fields, and waits for the answer's head (or a reset).
func (h *wsH2) open(id uint32, authority, path string, kv ...string) *wsStream {
	h.t.Helper()
	return h.openWith(id, append([]string{":method", "CONNECT", ":protocol", "websocket", ":scheme", "https",
		":path", path, ":authority", authority, "sec-websocket-version", "13", "origin", "https://" + authority}, kv...)...)
}

// openWith opens stream id with the given fields, in order.
func (h *wsH2) openWith(id uint32, fields ...string) *wsStream {
	h.t.Helper()
	pr, pw := io.Pipe()
	st := &wsStream{id: id, pr: pr, pw: pw, br: bufio.NewReader(pr)}
	h.mu.Lock()
	st.win = h.initWin
	h.streams[id] = st
	h.hbuf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		h.enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: h.hbuf.Bytes(), EndHeaders: true})
	h.mu.Unlock()
	h.waitFor("the answer to stream "+fmt.Sprint(id), func() bool { return st.status != "" || st.isRst })
	return st
}

// waitFor waits until cond holds (h.mu held while it is checked), the
// connection fails or the test's timeout passes.
func (h *wsH2) waitFor(what string, cond func() bool) {
	h.t.Helper()
	timer := time.AfterFunc(testTimeoutWS, func() { h.mu.Lock(); h.cond.Broadcast(); h.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(testTimeoutWS)
	h.mu.Lock()
	defer h.mu.Unlock()
	for !cond() {
		if h.readErr != nil {
			h.t.Fatalf("waiting for %s: connection failed: %v", what, h.readErr)
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("waiting for %s: timed out", what)
		}
		h.cond.Wait()
	}
}

// send writes p on the stream as DATA, as the server's windows allow.
func (h *wsH2) send(st *wsStream, p []byte, end bool) {
	h.t.Helper()
	for len(p) > 0 || end {
		var n int64
		h.waitFor("send window", func() bool {
			n = min(int64(len(p)), st.win, h.connWin, 16384)
			return n > 0 || len(p) == 0 || st.isRst
		})
		h.mu.Lock()
		if st.isRst {
			h.mu.Unlock()
			return
		}
		last := end && int(n) == len(p)
		h.fr.WriteData(st.id, last, p[:n])
		st.win -= n
		h.connWin -= n
		h.mu.Unlock()
		p = p[n:]
		if last {
			return
		}
	}
}

// sendMsg sends one masked WebSocket text frame (RFC 6455 §5.2).
func (h *wsH2) sendMsg(st *wsStream, msg string) {
	h.send(st, wsFrame(0x1, []byte(msg)), false)
}

func wsFrame(op byte, payload []byte) []byte {
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	mask := [4]byte{1, 2, 3, 4}
	b = append(b, mask[:]...)
	for i, c := range payload {
		b = append(b, c^mask[i%4])
	}
	return b
}

// readFrame reads one WebSocket frame the upstream sent (unmasked).
func (st *wsStream) readFrame() (op byte, payload []byte, err error) { return readWSFrame(st.br) }

// readWSFrame reads one unmasked WebSocket frame.
func readWSFrame(br *bufio.Reader) (op byte, payload []byte, err error) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(hdr[1] & 0x7f)
	switch n {
	case 126:
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(l[:]))
	case 127:
		var l [8]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(l[:])
	}
	payload = make([]byte, n)
	_, err = io.ReadFull(br, payload)
	return hdr[0] & 0x0f, payload, err
}

// readMsg reads text frames until want's length came (the echo
// upstream may split a long message into several frames).
func (st *wsStream) readMsg(t *testing.T, want int) string {
	t.Helper()
	return readWSMsg(t, st.br, want)
}

func readWSMsg(t *testing.T, br *bufio.Reader, want int) string {
	t.Helper()
	var got []byte
	for len(got) < want {
		op, p, err := readWSFrame(br)
		if err != nil {
			t.Fatalf("reading the echo: %v after %d of %d bytes", err, len(got), want)
		}
		if op != 0x1 && op != 0x0 {
			t.Fatalf("frame opcode %d, want text", op)
		}
		got = append(got, p...)
	}
	return string(got)
}

func wsAccept(key string) string {
	h := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// wsTransports runs f over h2c and over TLS.
func wsTransports(t *testing.T, f func(t *testing.T, e *wsEnv)) {
	for _, overTLS := range []bool{false, true} {
		name := "h2c"
		if overTLS {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) { f(t, startWSEnv(t, overTLS)) })
	}
}

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
