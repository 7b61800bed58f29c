package h2conn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/testutil"
)

const testTimeout = 10 * time.Second

// testServer serves cfg on a loopback listener until the test ends.
type testServer struct {
	srv  *Server
	addr string
	mu   sync.Mutex
	refs []httpmsg.Refusal
}

func startServer(t *testing.T, cfg Config) *testServer {
	t.Helper()
	ts := &testServer{}
	cfg.Refused = func(r httpmsg.Refusal) {
		ts.mu.Lock()
		ts.refs = append(ts.refs, r)
		ts.mu.Unlock()
	}
	ts.srv = New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer panics.Recover("test accept")
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer panics.Recover("test conn")
				ts.srv.ServeConn(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ts.srv.Shutdown(ctx)
		wg.Wait()
	})
	return ts
}

func (ts *testServer) refusals() []httpmsg.Refusal {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]httpmsg.Refusal(nil), ts.refs...)
}

// client is x/net's HTTP/2 client over h2c to ts.
func (ts *testServer) client(t *testing.T) *http.Client {
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, _ string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, ts.addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: testTimeout}
}

// rawClient writes exactly the frames a test asks for.
type rawClient struct {
	t    *testing.T
	c    net.Conn
	fr   *http2.Framer
	wmu  sync.Mutex
	hbuf bytes.Buffer
	enc  *hpack.Encoder
}

func dialRaw(t *testing.T, addr string, settings ...http2.Setting) *rawClient {
	t.Helper()
	c := testutil.DialRaw(t, addr)
	rc := &rawClient{t: t, c: c}
	rc.fr = http2.NewFramer(c, bufio.NewReader(c))
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	rc.enc = hpack.NewEncoder(&rc.hbuf)
	io.WriteString(c, http2.ClientPreface)
	rc.write(func() error { return rc.fr.WriteSettings(settings...) })
	return rc
}

func (rc *rawClient) write(f func() error) {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	if err := f(); err != nil {
		rc.t.Errorf("writing a frame: %v", err)
	}
}

// get opens stream id with a GET of path.
func (rc *rawClient) get(id uint32, path string, end bool, extra ...string) {
	rc.wmu.Lock()
	rc.hbuf.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "example.com"}, {":path", path}} {
		rc.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for i := 0; i+1 < len(extra); i += 2 {
		rc.enc.WriteField(hpack.HeaderField{Name: extra[i], Value: extra[i+1]})
	}
	b := bytes.Clone(rc.hbuf.Bytes())
	rc.wmu.Unlock()
	rc.write(func() error {
		return rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndStream: end, EndHeaders: true})
	})
}

// next reads the next frame other than SETTINGS (acknowledged) and
// PING and WINDOW_UPDATE; nil when the connection ended.
func (rc *rawClient) next() http2.Frame {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(testTimeout))
	for {
		f, err := rc.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				rc.t.Fatalf("no frame within %v", testTimeout)
			}
			return nil
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				rc.write(rc.fr.WriteSettingsAck)
			}
			continue
		case *http2.PingFrame, *http2.WindowUpdateFrame:
			continue
		}
		return f
	}
}

// handlerFunc adapts a function for Config.Handler.
type handlerFunc func(w httpmsg.ResponseWriter, r *httpmsg.Request)

func (f handlerFunc) ServeProxy(w httpmsg.ResponseWriter, r *httpmsg.Request) { f(w, r) }
