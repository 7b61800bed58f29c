// Package stdhttp adapts net/http to edgeway's request type: Handler turns
// an httpmsg.Handler into an http.Handler, for the front ends that stay on
// net/http servers (HTTP/2 over x/net/http2, later HTTP/3) and for tests
// that serve the router with httptest. It copies the header map into a
// field list and back, so it costs what net/http costs; the HTTP/1 engine
// does not go through it.
package stdhttp

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// Handler returns an http.Handler that serves every request with h.
func Handler(h httpmsg.Handler) http.Handler { return &adapter{h: h} }

// Options tunes HandlerWith.
type Options struct {
	// StallTimeout resets an HTTP/2 (or HTTP/3) stream whose response
	// body makes no progress for this long (the client does not open
	// its flow-control window) and fails a request body read that gets
	// no bytes for this long. Zero: no bound beyond the server's own.
	StallTimeout time.Duration
	// MaxHeaderBytes caps an HTTP/2 or HTTP/3 request's header list,
	// counted as RFC 9113 §6.5.2 and RFC 9114 §4.2.2 count it (each
	// field's name and value plus 32 bytes, pseudo-header fields
	// included); a larger request gets 431 on its stream, and its
	// connection is kept. The server in front must accept larger lists
	// than this (x/net and quic-go answer 431 themselves, unseen, past
	// their own limit). Zero: no limit here.
	MaxHeaderBytes int
	// Listener names the listener in the Refusals.
	Listener string
	// Refused, when set, is told of each HTTP/2 or HTTP/3 request the
	// adapter answers itself (400 for a malformed request, 431); it runs
	// on the request's goroutine and must be quick.
	Refused func(httpmsg.Refusal)
}

// HandlerWith is Handler with options.
func HandlerWith(h httpmsg.Handler, o Options) http.Handler {
	return &adapter{h: h, stall: o.StallTimeout, maxHeader: o.MaxHeaderBytes, listener: o.Listener, refused: o.Refused}
}

type adapter struct {
	h         httpmsg.Handler
	stall     time.Duration
	maxHeader int
	listener  string
	refused   func(httpmsg.Refusal)
	pool      sync.Pool // *state
}

// state is one request's adapted form, pooled. The pool holds what only
// the handler's goroutine touches while ServeHTTP runs; the request body
// is allocated apart (see body).
type state struct {
	req    httpmsg.Request
	fields httpmsg.Header
	w      writer
}

func (a *adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor >= 2 {
		if status, reason := a.check(r); status != 0 {
			a.refuse(w, r, status, reason)
			return
		}
	}
	extended, ws := extendedConnect(r) // websocket.go
	if extended && !ws {
		http.Error(w, http.StatusText(http.StatusNotImplemented), http.StatusNotImplemented)
		return
	}
	st, _ := a.pool.Get().(*state)
	if st == nil {
		st = &state{fields: make(httpmsg.Header, 0, 16)}
	}
	fill(&st.req, st.fields[:0], r)
	st.fields = st.req.Header
	st.w = writer{w: w, rc: http.NewResponseController(w), proto: r.ProtoMajor, head: r.Method == http.MethodHead}
	if ws {
		asWebSocketGET(&st.req, &st.w)
		st.fields = st.req.Header
	}
	if r.ProtoMajor >= 2 {
		st.w.stall = a.stall
		if st.req.Body != nil {
			st.w.body = &body{r: st.req.Body, rc: st.w.rc, stall: a.stall, left: st.req.ContentLength}
			st.req.Body = st.w.body
		}
	}
	a.serve(st)
	if st.w.body != nil {
		st.w.body.close()
	}
	aborted := st.w.aborted || (st.w.bodyLen >= 0 && st.w.written < st.w.bodyLen && !st.w.head && st.w.status != 304 && st.w.status != 204)
	// Lifetime: the strings in st.req and st.fields are net/http's own
	// (heap strings it allocated for this request), so nothing viewing
	// them can go wrong; the slices are cleared so that the pool does
	// not keep a finished request's values alive.
	clear(st.fields)
	// The writer may be reused: every goroutine that could call it has
	// stopped (the router detaches its watchdog and closes its body gate
	// before its handler returns; a tunnel's copiers use the hijacked
	// connection, not the writer).
	st.req, st.w = httpmsg.Request{}, writer{}
	a.pool.Put(st)
	if aborted {
		panic(http.ErrAbortHandler) // net/http closes the connection or resets the stream
	}
}

// check applies to an HTTP/2 or HTTP/3 request what the server in front
// leaves to the application: the header list limit, then validH2. It
// returns the status and reason of a refusal, or 0.
func (a *adapter) check(r *http.Request) (int, string) {
	if a.maxHeader > 0 && headerListSize(r) > a.maxHeader {
		return http.StatusRequestHeaderFieldsTooLarge, httpmsg.ReasonHeadTooLarge
	}
	if reason := validH2(r); reason != "" {
		// A malformed request (RFC 9113 §8.1.1): the client's mistake,
		// answered before anything is forwarded.
		return http.StatusBadRequest, reason
	}
	return 0, ""
}

// refuse answers a request the adapter refused and reports it.
func (a *adapter) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	if a.refused != nil {
		remote, _ := netip.ParseAddrPort(r.RemoteAddr)
		proto := "HTTP/2"
		if r.ProtoMajor == 3 {
			proto = "HTTP/3"
		}
		a.refused(httpmsg.Refusal{Listener: a.listener, Protocol: proto, Status: status, Reason: reason, Remote: remote})
	}
	http.Error(w, http.StatusText(status), status)
}

// headerListSize is r's header list size as HTTP/2 and HTTP/3 count it
// (RFC 9113 §6.5.2): every field's name and value and 32 bytes, the
// pseudo-header fields included. It reads the map the server built, so
// Cookie fields the server joined count once, and :scheme as https: a
// little off the wire's count, by far less than the slack servers allow.
func headerListSize(r *http.Request) int {
	const overhead = 32
	// :scheme is not kept in r; it is counted as https, the longer.
	n := len(":method") + len(r.Method) + len(":path") + len(r.RequestURI) +
		len(":authority") + len(r.Host) + len(":scheme") + len("https") + 4*overhead
	for k, vv := range r.Header {
		for _, v := range vv {
			n += len(k) + len(v) + overhead
		}
	}
	return n
}

// serve runs the handler. A panic ends only this request: it is reported
// and the request aborted (state not recycled: its condition is unknown).
func (a *adapter) serve(st *state) {
	defer func() {
		if v := recover(); v != nil {
			if !panics.IsAbort(v) {
				panics.Report("http handler", v, slog.String("method", st.req.Method))
			}
			if st.w.body != nil {
				st.w.body.close()
			}
			panic(http.ErrAbortHandler)
		}
	}()
	a.h.ServeProxy(&st.w, &st.req)
}

// fill sets req from r, with its fields appended to fields.
func fill(req *httpmsg.Request, fields httpmsg.Header, r *http.Request) {
	fields = httpmsg.AppendMap(fields, r.Header)
	target := r.RequestURI
	if target == "" {
		target = r.URL.RequestURI()
	}
	*req = httpmsg.Request{
		Method: r.Method, Target: target, Host: r.Host,
		ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor,
		Header: fields, ContentLength: r.ContentLength,
		Close: r.Close, TLS: r.TLS != nil, Ctx: r.Context(),
	}
	if r.TLS != nil {
		req.TLSVersion, req.ServerName = r.TLS.Version, r.TLS.ServerName
		if len(r.TLS.VerifiedChains) > 0 {
			req.ClientCert = r.TLS.VerifiedChains[0][0]
		}
	}
	if r.Body == nil || r.Body == http.NoBody {
		req.ContentLength = 0
	} else {
		req.Body = r.Body
	}
	if r.Trailer != nil {
		req.Trailer = func() httpmsg.Header { return httpmsg.AppendMap(nil, r.Trailer) }
	}
	req.RemoteAddr, _ = netip.ParseAddrPort(r.RemoteAddr)
	switch a := r.Context().Value(http.LocalAddrContextKey).(type) {
	case *net.TCPAddr: // HTTP/2
		req.LocalAddr = a.AddrPort()
	case *net.UDPAddr: // HTTP/3
		req.LocalAddr = a.AddrPort()
	}
}

// writer is httpmsg.ResponseWriter over an http.ResponseWriter.
type writer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	proto   int
	head    bool
	status  int
	bodyLen int64
	written int64
	aborted bool
	upgrade httpmsg.Header // a 101's fields, until Tunnel
	ws      *wsState       // an extended CONNECT for websocket (websocket.go)
	body    *body          // the request body (HTTP/2, HTTP/3); nil: none or HTTP/1

	stall time.Duration // Options.StallTimeout; 0 (HTTP/1): none
	wdl   time.Time     // the stream's write deadline, as last set
}

func (w *writer) WriteHead(status int, h httpmsg.Header, bodyLen int64) error {
	if status == http.StatusSwitchingProtocols && w.ws != nil {
		return w.switchWebSocket(h)
	}
	if status == http.StatusSwitchingProtocols {
		w.status = status
		for _, f := range h {
			w.upgrade = append(w.upgrade, httpmsg.Field{Name: strings.Clone(f.Name), Value: strings.Clone(f.Value)})
		}
		return nil
	}
	// net/http writes the header later; h's strings may live in a buffer
	// that is reused once WriteHead returns, so they are copied.
	hdr := w.w.Header()
	for _, f := range h {
		k := http.CanonicalHeaderKey(strings.Clone(f.Name))
		hdr[k] = append(hdr[k], strings.Clone(f.Value))
	}
	if status < 200 {
		w.w.WriteHeader(status)
		for _, f := range h {
			delete(hdr, http.CanonicalHeaderKey(f.Name))
		}
		return nil
	}
	w.status, w.bodyLen = status, bodyLen
	if bodyLen >= 0 && status != http.StatusNoContent {
		hdr["Content-Length"] = []string{strconv.FormatInt(bodyLen, 10)}
	}
	w.w.WriteHeader(status)
	return nil
}

func (w *writer) Write(p []byte) (int, error) {
	w.armWrite()
	n, err := w.w.Write(p)
	w.written += int64(n)
	return n, err
}

func (w *writer) Flush() error {
	w.armWrite()
	return w.rc.Flush()
}

func (w *writer) WriteTrailer(h httpmsg.Header) error {
	hdr := w.w.Header()
	for _, f := range h {
		k := http.TrailerPrefix + http.CanonicalHeaderKey(f.Name)
		hdr[k] = append(hdr[k], strings.Clone(f.Value))
	}
	return nil
}

func (w *writer) Abort() { w.aborted = true }

// SetReadDeadline bounds the body's reads. It may be called from another
// goroutine than the handler's (the router's idle watchdog).
func (w *writer) SetReadDeadline(t time.Time) error {
	if b := w.body; b != nil {
		return b.setReadDeadline(t)
	}
	return w.rc.SetReadDeadline(t)
}

var errNoTunnel = errors.New("stdhttp: the connection cannot be tunneled (not HTTP/1)")

// Tunnel hijacks an HTTP/1 connection, sends the 101 and copies bytes both
// ways on two goroutines until both directions end.
func (w *writer) Tunnel(up net.Conn, pre []byte) error {
	if w.ws != nil {
		return w.tunnelWebSocket(up, pre)
	}
	if w.proto != 1 || w.status != http.StatusSwitchingProtocols {
		up.Close()
		return errNoTunnel
	}
	c, brw, err := w.rc.Hijack()
	if err != nil {
		up.Close()
		return err
	}
	bw := brw.Writer
	bw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	for _, f := range w.upgrade {
		bw.WriteString(f.Name)
		bw.WriteString(": ")
		bw.WriteString(f.Value)
		bw.WriteString("\r\n")
	}
	bw.WriteString("Connection: Upgrade\r\n\r\n")
	bw.Write(pre)
	if err := bw.Flush(); err != nil {
		c.Close()
		up.Close()
		return err
	}
	panics.Go("tunnel", func() { pipe(c, brw.Reader, up) })
	return nil
}

// pipe copies client to up and up to client; when either direction ends,
// both connections close (as httputil.ReverseProxy does). An up that is
// an httpmsg.TunnelReporter learns what was carried before it is closed.
func pipe(client net.Conn, cr *bufio.Reader, up net.Conn) {
	type result struct {
		toUp bool
		n    int64
		err  error
	}
	done := make(chan result, 2)
	panics.Go("tunnel", func() {
		n, err := io.Copy(up, cr)
		done <- result{true, n, err}
	})
	panics.Go("tunnel", func() {
		n, err := io.Copy(client, up)
		done <- result{false, n, err}
	})
	end := func() {
		client.Close()
		up.SetReadDeadline(time.Now()) // wakes the copy from up; up stays open to be told
	}
	r, reports := up.(httpmsg.TunnelReporter)
	if reports {
		r.TunnelStarted(end)
	}
	first := <-done
	end()
	second := <-done
	if reports {
		e := httpmsg.TunnelEnd{How: httpmsg.TunnelServerClosed}
		switch {
		case first.err != nil:
			e.How = httpmsg.TunnelError
		case first.toUp:
			e.How = httpmsg.TunnelClientClosed
		}
		for _, d := range [2]result{first, second} {
			if d.toUp {
				e.ToUpstream = d.n
			} else {
				e.ToClient = d.n
			}
		}
		r.TunnelEnded(e)
	}
	up.Close()
}
