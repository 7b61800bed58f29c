package listeners

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/testutil"
)

// WebSocket over HTTP/3 (RFC 9220): quic-go advertises extended
// CONNECT, and the adapter serves a websocket one through the router as
// the HTTP/1.1 handshake it stands for.

// h3WS is an HTTP/3 connection to a QUIC listener serving e's router.
type h3WS struct {
	cc *http3.ClientConn
}

func dialH3WS(t *testing.T, e *wsEnv) *h3WS {
	t.Helper()
	cfg := testConfig()
	cfg.Name = "web"
	srv, err := ListenQUIC(cfg, &tls.Config{Certificates: []tls.Certificate{e.ca.TLSCert(t, testutil.IssueOptions{}, "ws.test")}},
		e.rt.Proxy("web"), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() {
		defer panics.Recover("test h3 serve")
		served <- srv.Serve()
	}()
	t.Cleanup(func() { srv.Close(); <-served })
	ctx, cancel := context.WithTimeout(context.Background(), testTimeoutWS)
	defer cancel()
	conn, err := quic.DialAddr(ctx, srv.Addr().String(),
		&tls.Config{RootCAs: e.ca.Pool, ServerName: "ws.test", NextProtos: []string{http3.NextProtoH3}}, &quic.Config{})
	if err != nil {
		t.Fatalf("QUIC dial: %v", err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	tr := &http3.Transport{}
	t.Cleanup(func() { tr.Close() })
	cc := tr.NewClientConn(conn)
	select {
	case <-cc.ReceivedSettings():
	case <-ctx.Done():
		t.Fatal("no SETTINGS from the server")
	}
	return &h3WS{cc: cc}
}

// open sends an extended CONNECT for path and reads the answer's head.
func (h *h3WS) open(t *testing.T, path string) (*http3.RequestStream, *http.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeoutWS)
	t.Cleanup(cancel)
	rs, err := h.cc.OpenRequestStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: http.MethodConnect, Proto: "websocket", URL: &url.URL{Scheme: "https", Host: "ws.test", Path: path},
		Host: "ws.test", Header: http.Header{"Sec-Websocket-Version": {"13"}, "Origin": {"https://ws.test"}}}
	if err := rs.SendRequestHeader(req.WithContext(ctx)); err != nil {
		t.Fatalf("extended CONNECT: %v", err)
	}
	res, err := rs.ReadResponse()
	if err != nil {
		t.Fatalf("extended CONNECT's answer: %v", err)
	}
	return rs, res
}

func TestH3WebSocket(t *testing.T) {
	e := startWSEnv(t, true)
	h := dialH3WS(t, e)
	if !h.cc.Settings().EnableExtendedConnect {
		t.Fatal("SETTINGS_ENABLE_CONNECT_PROTOCOL not advertised over HTTP/3")
	}
	rs, res := h.open(t, "/echo")
	if res.StatusCode != 200 || res.Header.Get("Sec-Websocket-Accept") != "" {
		t.Fatalf("answered %d %v, want 200 without Sec-WebSocket-Accept", res.StatusCode, res.Header)
	}
	rs.SetDeadline(time.Now().Add(testTimeoutWS))
	br := bufio.NewReader(rs)
	for _, msg := range []string{"hello", strings.Repeat("y", 3<<20)} {
		sent := make(chan error, 1)
		go func() {
			defer panics.Recover("test h3 sender")
			_, err := rs.Write(wsFrame(0x1, []byte(msg)))
			sent <- err
		}()
		if got := readWSMsg(t, br, len(msg)); got != msg {
			t.Fatalf("echo of %d bytes differs", len(msg))
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	// The client's FIN half-closes the upstream, whose end is the
	// stream's end.
	rs.Close()
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatalf("after the client's FIN: %v, want the stream's end", err)
	}
	testutil.WaitFor(t, "the upstream WebSocket closed", func() bool { return e.echoOn.Load() == 0 })
	testutil.WaitFor(t, "the tunnel's access line", func() bool {
		return len(e.access.lines("msg=tunnel")) == 1
	})
	if l := e.access.lines("msg=tunnel")[0]; !strings.Contains(l, "kind=websocket") || !strings.Contains(l, "end=client_closed") {
		t.Errorf("tunnel line %q, want a websocket the client closed", l)
	}

	// The upstream's close ends the stream (FIN) without waiting for the
	// client's.
	rs, res = h.open(t, "/tag")
	if res.StatusCode != 200 {
		t.Fatalf("/tag answered %d", res.StatusCode)
	}
	rs.SetDeadline(time.Now().Add(testTimeoutWS))
	if _, err := rs.Write(wsFrame(0x8, []byte{0x03, 0xe8})); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, rs); err != nil {
		t.Fatalf("after the upstream's close: %v, want the stream's end", err)
	}
	testutil.WaitFor(t, "the upstream's end in the log", func() bool {
		return len(e.access.lines("end=server_closed")) == 1
	})

	// Refusals are passed as their status.
	for _, tc := range []struct {
		path string
		want int
	}{{"/refuse", 403}, {"/none", 404}} {
		rs, res := h.open(t, tc.path)
		if res.StatusCode != tc.want {
			t.Errorf("%s: answered %d, want %d", tc.path, res.StatusCode, tc.want)
		}
		rs.CancelRead(0)
		rs.Close()
	}
}
