package stdhttp

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// WebSocket over HTTP/3 (RFC 9220). quic-go's http3.Server always
// advertises SETTINGS_ENABLE_CONNECT_PROTOCOL (v0.65 has no option to
// leave it out) and hands an extended CONNECT to the handler as a
// CONNECT whose Proto is the :protocol. The adapter serves a websocket
// one as the HTTP/1.1 request it stands for, as listeners/h2conn does
// for HTTP/2 (RFC 8441): GET with Connection: Upgrade, Upgrade:
// websocket and a Sec-WebSocket-Key made here. The upstream's 101 (its
// Sec-WebSocket-Accept checked) becomes a 200 without
// Sec-WebSocket-Accept; then the stream is taken over (http3's
// HTTPStreamer) and two goroutines copy, QUIC's flow control bounding
// each way. The stream's FIN and a half-close of the upstream connection
// stand for each other; a failure cancels the stream (H3_CONNECT_ERROR).
//
// x/net's HTTP/2 server does not advertise extended CONNECT unless
// GODEBUG has http2xconnect=1; such a request, or one over HTTP/3 for
// another protocol, is answered 501.

var errBadSwitch = errors.New("stdhttp: the upstream's 101 does not answer the WebSocket handshake sent")

// wsState is an extended CONNECT's, on its writer.
type wsState struct {
	key      string
	body     io.Reader // the client's DATA
	switched bool
}

// extendedConnect reports an extended CONNECT (RFC 8441, RFC 9220) and
// whether it is one for websocket over HTTP/3, which is served.
func extendedConnect(r *http.Request) (extended, served bool) {
	if r.Method != http.MethodConnect || r.ProtoMajor < 2 {
		return false, false
	}
	switch {
	case r.ProtoMajor == 3 && r.Proto != "HTTP/3.0":
		return true, r.Proto == "websocket"
	case r.ProtoMajor == 2 && r.Header.Get(":protocol") != "":
		return true, false
	}
	return false, false
}

// asWebSocketGET turns req, filled from an extended CONNECT, into the
// GET with Upgrade it stands for; w keeps the key and the client's
// stream.
func asWebSocketGET(req *httpmsg.Request, w *writer) {
	key := httpmsg.NewWebSocketKey()
	req.Header = append(req.Header.Del("Sec-Websocket-Key"), httpmsg.Field{Name: "Connection", Value: "Upgrade"},
		httpmsg.Field{Name: "Upgrade", Value: "websocket"}, httpmsg.Field{Name: "Sec-WebSocket-Key", Value: key})
	w.ws = &wsState{key: key, body: req.Body}
	req.Method, req.Body, req.ContentLength, req.Trailer = http.MethodGet, nil, 0, nil
}

// switchWebSocket is WriteHead(101) for an extended CONNECT: a 200
// without the HTTP/1.1 handshake's fields, or 502 when the 101 does not
// answer the key sent.
func (w *writer) switchWebSocket(h httpmsg.Header) error {
	if !httpmsg.EqualFold(h.Get("Upgrade"), "websocket") || h.Get("Sec-WebSocket-Accept") != httpmsg.WebSocketAccept(w.ws.key) {
		w.WriteHead(http.StatusBadGateway, nil, 0)
		return errBadSwitch
	}
	hdr := w.w.Header()
	for _, f := range h {
		if httpmsg.EqualFold(f.Name, "Upgrade") || httpmsg.EqualFold(f.Name, "Sec-WebSocket-Accept") {
			continue
		}
		k := http.CanonicalHeaderKey(strings.Clone(f.Name))
		hdr[k] = append(hdr[k], strings.Clone(f.Value))
	}
	w.w.WriteHeader(http.StatusOK)
	w.status, w.bodyLen, w.ws.switched = http.StatusSwitchingProtocols, -1, true
	return nil
}

// tunnelWebSocket takes the HTTP/3 stream over (its 200 goes out) and
// starts the copiers.
func (w *writer) tunnelWebSocket(up net.Conn, pre []byte) error {
	hs, ok := w.w.(http3.HTTPStreamer)
	if !ok || !w.ws.switched {
		up.Close()
		return errNoTunnel
	}
	str, err := hs.HTTPStream()
	if err != nil {
		up.Close()
		return err
	}
	t := &h3Tunnel{str: str, body: w.ws.body, up: up, pre: append([]byte(nil), pre...)}
	panics.Go("h3 websocket", t.run)
	return nil
}

// h3Tunnel carries one WebSocket over an HTTP/3 stream.
type h3Tunnel struct {
	str        *http3.Stream
	body       io.Reader
	up         net.Conn
	pre        []byte
	toUp, toCl atomic.Int64
	how        atomic.Pointer[string]
	upDone     atomic.Bool // the upstream's end was sent
}

func (t *h3Tunnel) first(how string) { t.how.CompareAndSwap(nil, &how) }

// end cancels the stream both ways and wakes the upstream's copier.
func (t *h3Tunnel) end() {
	t.str.CancelRead(quic.StreamErrorCode(http3.ErrCodeConnectError))
	t.str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeConnectError))
	t.up.SetDeadline(time.Unix(1, 0))
}

func (t *h3Tunnel) run() {
	r, reports := t.up.(httpmsg.TunnelReporter)
	if reports {
		r.TunnelStarted(t.end)
	}
	done := make(chan struct{})
	panics.Go("h3 websocket to upstream", func() {
		defer close(done)
		t.toUpstream()
	})
	t.toClient()
	<-done
	if reports {
		how := httpmsg.TunnelError
		if p := t.how.Load(); p != nil {
			how = *p
		}
		r.TunnelEnded(httpmsg.TunnelEnd{ToUpstream: t.toUp.Load(), ToClient: t.toCl.Load(), How: how})
	}
	t.up.Close()
}

// toUpstream copies the client's DATA to up; the stream's FIN
// half-closes up.
func (t *h3Tunnel) toUpstream() {
	n, err := io.Copy(t.up, t.body)
	t.toUp.Add(n)
	if err != nil && t.upDone.Load() {
		return // toClient stopped the reads: the upstream ended
	}
	if err != nil {
		t.first(httpmsg.TunnelError)
		t.end()
		return
	}
	t.first(httpmsg.TunnelClientClosed)
	if cw, ok := t.up.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}

// toClient copies up's bytes to the stream; up's end is the stream's
// FIN.
func (t *h3Tunnel) toClient() {
	if len(t.pre) > 0 {
		if _, err := t.str.Write(t.pre); err != nil {
			t.first(httpmsg.TunnelError)
			t.end()
			return
		}
		t.toCl.Add(int64(len(t.pre)))
	}
	n, err := io.Copy(t.str, t.up)
	t.toCl.Add(n)
	if err != nil {
		t.first(httpmsg.TunnelError)
		t.end()
		return
	}
	t.first(httpmsg.TunnelServerClosed)
	t.str.Close()
	// As over HTTP/2: the upstream is gone, so the client is asked to
	// stop sending (STOP_SENDING, H3_NO_ERROR) rather than waited for.
	t.upDone.Store(true)
	t.str.CancelRead(quic.StreamErrorCode(http3.ErrCodeNoError))
}
