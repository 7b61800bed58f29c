package listeners

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

const ioTimeout = 5 * time.Second

// testConfig is a loopback listener on port 0 with short, test-sized limits.
func testConfig() conf.Listener {
	return conf.Listener{Name: "test", Addr: "127.0.0.1:0", NoDelay: true}
}

// start serves h on cfg and shuts the server down when the test ends.
func start(t *testing.T, cfg conf.Listener, h httpmsg.Handler) *Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := Listen(cfg, h, log)
	if err != nil {
		t.Fatal(err)
	}
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

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(ioTimeout))
	return c
}

// exchange writes raw bytes and reads until the server closes.
// closed is false when the read deadline passed first.
func exchange(t *testing.T, s *Server, raw string) (out string, closed bool) {
	t.Helper()
	c := dial(t, s)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

// readResponses parses the responses in raw, in order.
func readResponses(t *testing.T, raw string) []*http.Response {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(raw))
	var out []*http.Response
	for {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		body, _ := io.ReadAll(res.Body)
		res.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, res)
	}
}

func body(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
