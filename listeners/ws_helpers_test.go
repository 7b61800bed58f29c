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
