package listeners

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// reply answers with a fixed text body.
func reply(w httpmsg.ResponseWriter, body string) {
	w.WriteHead(200, httpmsg.Header{{Name: "Content-Type", Value: "text/plain"}}, int64(len(body)))
	io.WriteString(w, body)
}

func okHandler() httpmsg.Handler {
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		reply(w, fmt.Sprintf("HTTP/%d.%d %s", r.ProtoMajor, r.ProtoMinor, r.Path()))
	})
}

func TestH2CPriorKnowledge(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(), okHandler())
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: ioTimeout}).Get("http://" + s.Addr().String() + "/h2")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(res); got != "HTTP/2.0 /h2" {
		t.Fatalf("got %q", got)
	}
}

func TestProtocolsHTTP1Only(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Protocols = []string{"http1"}
	s := start(t, cfg, okHandler())
	out, closed := exchange(t, s, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	if !closed || !strings.HasPrefix(out, "HTTP/1.1 ") {
		t.Fatalf("closed=%v %q", closed, out)
	}
	if _, err := Listen(conf2("spdy"), okHandler(), nil); err == nil {
		t.Fatal("Listen accepted protocol spdy")
	}
}

func TestHeaderTooLarge(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxHeaderBytes = 1 << 10
	s := start(t, cfg, okHandler())
	raw := "GET / HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("b", 16<<10) + "\r\n\r\n"
	out, closed := exchange(t, s, raw)
	res := readResponses(t, out)
	if !closed || len(res) != 1 || res[0].StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("closed=%v %q", closed, out)
	}
}

func TestReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ReadHeaderTimeout = 200 * time.Millisecond
	s := start(t, cfg, okHandler())
	c := dial(t, s)
	begin := time.Now()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n") // and never the end
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("read %d, %v; want EOF", n, err)
	}
	if d := time.Since(begin); d < 150*time.Millisecond {
		t.Fatalf("closed after %v", d)
	}
}

func TestMaxConns(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxConns = 1
	s := start(t, cfg, okHandler())
	get := func(c net.Conn) error {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		buf := make([]byte, 512)
		_, err := c.Read(buf)
		return err
	}
	first, second := dial(t, s), dial(t, s)
	if err := get(first); err != nil {
		t.Fatal(err)
	}
	// The second connection sits in the backlog while the first is open.
	second.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var ne net.Error
	if err := get(second); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second connection served while the first is open: %v", err)
	}
	first.Close()
	second.SetReadDeadline(time.Now().Add(ioTimeout))
	buf := make([]byte, 512)
	if n, err := second.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("second connection: %q, %v", buf[:n], err)
	}
}

func TestShutdownGraceful(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	s, served := serveBare(t, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		close(entered)
		<-release
		reply(w, "done")
	}))
	c := dial(t, s)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	testutil.WaitFor(t, "listener closed", func() bool {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err == nil {
			nc.Close()
		}
		return err != nil
	})
	close(release)
	out, _ := io.ReadAll(c)
	if res := readResponses(t, string(out)); len(res) != 1 || body(res[0]) != "done" {
		t.Fatalf("in-flight request: %q", out)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestShutdownForced(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 2), make(chan struct{})
	defer close(release)
	quiet := quietServer(t)
	s, served := serveBare(t, httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		if r.Path() == "/tunnel" {
			up, err := net.Dial("tcp", quiet)
			if err != nil {
				t.Error(err)
				return
			}
			w.WriteHead(101, httpmsg.Header{{Name: "Upgrade", Value: "x"}}, 0)
			w.Tunnel(up, nil) // held open: a quiet tunnel
			entered <- struct{}{}
			return
		}
		entered <- struct{}{}
		<-release
	}))
	busy, tunnel := dial(t, s), dial(t, s)
	io.WriteString(busy, "GET /busy HTTP/1.1\r\nHost: a\r\n\r\n")
	io.WriteString(tunnel, "GET /tunnel HTTP/1.1\r\nHost: a\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n")
	<-entered
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want deadline exceeded", err)
	}
	for name, c := range map[string]net.Conn{"busy": busy, "tunnel": tunnel} {
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("%s connection not closed: %v", name, err)
		}
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// quietServer accepts connections and holds them open, silent, until the
// test ends.
func quietServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String()
}

// serveBare serves h without the cleanup shutdown of start.
func serveBare(t *testing.T, h httpmsg.Handler) (*Server, chan error) {
	t.Helper()
	s, err := Listen(testConfig(), h, nil)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	return s, served
}

func conf2(proto string) (c conf.Listener) {
	c = testConfig()
	c.Protocols = []string{proto}
	return c
}

// TestUpdateAppliesLiveSettings binds a listener whose timeouts would
// hold a silent client for an hour, then updates it as a reload does:
// an unfinished head and a parked keep-alive connection are closed by the
// new values, over HTTP/1 and h2c alike.
func TestUpdateAppliesLiveSettings(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ReadHeaderTimeout, cfg.IdleTimeout = time.Hour, time.Hour
	s := start(t, cfg, okHandler())
	next := cfg
	next.ReadHeaderTimeout, next.IdleTimeout = 200*time.Millisecond, 200*time.Millisecond
	if err := s.Update(next); err != nil {
		t.Fatal(err)
	}
	closed := func(c net.Conn) error {
		c.SetReadDeadline(time.Now().Add(ioTimeout))
		_, err := io.ReadAll(c)
		return err
	}
	head := dial(t, s)
	io.WriteString(head, "GET / HTTP/1.1\r\nHost: a\r\n") // and never the end
	if err := closed(head); err != nil {
		t.Errorf("unfinished head after read_header_timeout 1h -> 200ms: %v (want closed)", err)
	}
	idle := dial(t, s)
	io.WriteString(idle, "GET /a HTTP/1.1\r\nHost: a\r\n\r\n")
	idle.SetReadDeadline(time.Now().Add(ioTimeout))
	res, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || body(res) != "HTTP/1.1 /a" {
		t.Fatalf("keep-alive request: %v", err)
	}
	if err := closed(idle); err != nil {
		t.Errorf("parked connection after idle_timeout 1h -> 200ms: %v (want closed)", err)
	}
	if cur := s.h2.cur.Load(); cur.readHeader != next.ReadHeaderTimeout || cur.base.IdleTimeout != next.IdleTimeout {
		t.Errorf("h2c front after Update: read header %v, idle %v", cur.readHeader, cur.base.IdleTimeout)
	}
}
