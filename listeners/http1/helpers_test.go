package http1

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/engine"
)

const ioTimeout = 5 * time.Second

// testServer is an engine serving a Server on a loopback port.
type testServer struct {
	e   *engine.Engine
	srv *Server
}

func (ts *testServer) addr() string { return ts.e.Addr().String() }

// start serves h (with cfg's other fields) on a loopback engine and shuts
// it down when the test ends.
func start(t *testing.T, cfg Config, h httpmsg.Handler) *testServer {
	t.Helper()
	ts, served := startBare(t, cfg, h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ts.e.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts
}

// startBare is start without the shutdown at the end of the test.
func startBare(t *testing.T, cfg Config, h httpmsg.Handler) (*testServer, chan error) {
	t.Helper()
	ts := &testServer{}
	cfg.Handler = h
	cfg.Shutting = func() bool { return ts.e.Shutting() }
	cfg.Log = slog.New(slog.DiscardHandler)
	ts.srv = New(cfg)
	e, err := engine.Listen(engine.Config{Addr: "127.0.0.1:0", NoDelay: true, IdleTimeout: time.Minute}, ts.srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts.e = e
	served := make(chan error, 1)
	go func() { served <- e.Serve() }()
	return ts, served
}

func dial(t *testing.T, ts *testServer) net.Conn { return testutil.DialRaw(t, ts.addr()) }

// roundTrip writes raw bytes and reads until the server closes.
func roundTrip(t *testing.T, ts *testServer, raw string) (out string, closed bool) {
	return testutil.RawRoundTrip(t, ts.addr(), raw)
}

// readResponses parses the responses in raw, in order (as answers to HEAD
// when head is set).
func readResponses(_ *testing.T, raw string, head ...bool) []*http.Response {
	return testutil.ReadResponses(raw, len(head) > 0 && head[0])
}

func bodyOf(res *http.Response) string { return testutil.BodyOf(res) }

// reply writes a complete response with a known length.
func reply(w httpmsg.ResponseWriter, status int, s string) {
	w.WriteHead(status, httpmsg.Header{{Name: "Content-Type", Value: "text/plain"}}, int64(len(s)))
	io.WriteString(w, s)
}

func proto(r *httpmsg.Request) string {
	return fmt.Sprintf("HTTP/%d.%d", r.ProtoMajor, r.ProtoMinor)
}

// okHandler answers with the protocol and path.
func okHandler() httpmsg.Handler {
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		reply(w, http.StatusOK, proto(r)+" "+r.Path())
	})
}
