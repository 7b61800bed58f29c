package listeners

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

const ioTimeout = 5 * time.Second

// testConfig is a loopback listener on port 0 with a listen block's
// defaults, less TCP_DEFER_ACCEPT: tests that connect and stay silent
// must see their connection accepted at once.
func testConfig() conf.Listener {
	l := conf.DefaultListener("test", "127.0.0.1:0")
	l.DeferAccept = 0
	return l
}

// start serves h on cfg and shuts the server down when the test ends.
func start(t *testing.T, cfg conf.Listener, h httpmsg.Handler) *Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := Listen(cfg, h, log)
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, s)
}

// serve serves s and shuts it down when the test ends.
func serve(t *testing.T, s *Server) *Server {
	t.Helper()
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func dial(t *testing.T, s *Server) net.Conn { return testutil.DialRaw(t, s.Addr().String()) }

// exchange writes raw bytes and reads until the server closes.
func exchange(t *testing.T, s *Server, raw string) (out string, closed bool) {
	return testutil.RawRoundTrip(t, s.Addr().String(), raw)
}

func readResponses(_ *testing.T, raw string) []*http.Response {
	return testutil.ReadResponses(raw, false)
}

func body(res *http.Response) string { return testutil.BodyOf(res) }
