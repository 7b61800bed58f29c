//go:build linux

package engine

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// The tests here exercise the engine's own sockets (fdConn) where a call
// has to wait for the loop: reads and writes that meet EAGAIN, deadlines,
// a close under a waiting call, TLS over the descriptor. The rest of the
// package's tests run on them too (the default mode).

// smallSendBuffer makes the server's writes meet a full socket buffer
// soon (a client's small receive buffer would instead stall loopback TCP,
// whose segments are larger than it).
func smallSendBuffer() Config {
	cfg := testConfig()
	cfg.SendBuffer = 64 << 10
	return cfg
}

// served runs fn as the handler of the first line of one connection
// (after it was read) and returns the client side.
func served(t *testing.T, cfg Config, fn func(c *Conn) Action) (*Engine, *net.TCPConn) {
	t.Helper()
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		if line != "go" {
			return 0, false
		}
		return fn(c), true
	}}
	e := start(t, cfg, h)
	c := dial(t, e)
	if _, err := c.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	return e, c
}

// result carries a handler's outcome to the test goroutine.
func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not finish")
		return nil
	}
}

func TestOwnSocketNotNetConn(t *testing.T) {
	t.Parallel()
	kind := make(chan bool, 1)
	_, c := served(t, testConfig(), func(c *Conn) Action {
		_, isTCP := c.Socket().(*net.TCPConn)
		kind <- isTCP
		c.Write([]byte("echo go\n"))
		return Park
	})
	readN(t, c, len("echo go\n"))
	if <-kind {
		t.Error("the accepted socket is a *net.TCPConn; want the engine's own descriptor")
	}
	roundTrip(t, c, "after park") // dispatched again from the loop
	roundTrip(t, c, "and again")
}

func TestLargeResponseToSlowReader(t *testing.T) {
	t.Parallel()
	const size = 8 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	waited := make(chan bool, 1)
	e, c := served(t, smallSendBuffer(), func(c *Conn) Action {
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err := c.Write(payload) // meets a full socket buffer many times
		c.SetWriteDeadline(time.Time{})
		waited <- c.fd.wt.Load() != nil
		if err != nil {
			return Close
		}
		return Park
	})
	got := make([]byte, 0, size)
	buf := make([]byte, 1500)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(got) < size {
		n, err := c.Read(buf) // small reads: the writer keeps waiting
		if err != nil {
			t.Fatalf("after %d bytes: %v", len(got), err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("response bytes differ")
	}
	if !<-waited {
		t.Error("the write never had to wait: the test did not reach EAGAIN")
	}
	waitStats(t, e, "the connection to park", func(s Stats) bool { return s.Parked == 1 })
	roundTrip(t, c, "next") // keep-alive after the big answer
}

func TestRequestBodyArrivingSlowly(t *testing.T) {
	t.Parallel()
	const pieces, piece = 50, 4 << 10
	ready := make(chan struct{})
	done := make(chan error, 1)
	var body []byte
	_, c := served(t, testConfig(), func(c *Conn) Action {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		defer c.SetReadDeadline(time.Time{})
		buf := make([]byte, piece)
		for range pieces {
			ready <- struct{}{} // the client writes only now: the read waits
			if _, err := io.ReadFull(c, buf); err != nil {
				done <- err
				return Close
			}
			body = append(body, buf...)
		}
		done <- nil
		c.Write([]byte("echo go\n"))
		return Park
	})
	want := make([]byte, 0, pieces*piece)
	for i := range pieces {
		<-ready
		p := bytes.Repeat([]byte{byte('a' + i%26)}, piece)
		want = append(want, p...)
		if _, err := c.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := result(t, done); err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	if !bytes.Equal(body, want) {
		t.Fatal("body bytes differ")
	}
	readN(t, c, len("echo go\n"))
	roundTrip(t, c, "next")
}

func TestReadDeadline(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	_, c := served(t, testConfig(), func(c *Conn) Action {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Read(make([]byte, 10)) // the client sends nothing more
		done <- err
		return Close
	})
	err := result(t, done)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	waitEOF(t, c)
}

func TestDeadlineSetWhileWaiting(t *testing.T) {
	t.Parallel()
	waiting := make(chan *Conn, 1)
	done := make(chan error, 1)
	served(t, testConfig(), func(c *Conn) Action {
		waiting <- c
		_, err := c.Read(make([]byte, 10)) // no deadline yet
		done <- err
		return Close
	})
	c := <-waiting
	testutil.WaitFor(t, "the read to wait", func() bool { return c.fd.wt.Load() != nil })
	c.SetReadDeadline(time.Now()) // as crypto/tls and HTTP/2 do to interrupt a read
	if err := result(t, done); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read interrupted by a deadline: %v, want a timeout", err)
	}
}

func TestWriteDeadline(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	served(t, smallSendBuffer(), func(c *Conn) Action {
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, err := c.Write(make([]byte, 64<<20)) // the client reads nothing
		done <- err
		return Close
	})
	err := result(t, done)
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("write past the deadline: %v, want a timeout", err)
	}
}

func TestCloseWhileWaiting(t *testing.T) {
	t.Parallel()
	waiting := make(chan *Conn, 1)
	done := make(chan error, 1)
	e, client := served(t, testConfig(), func(c *Conn) Action {
		waiting <- c
		_, err := c.Read(make([]byte, 10))
		done <- err
		return Close
	})
	c := <-waiting
	testutil.WaitFor(t, "the read to wait", func() bool { return c.fd.wt.Load() != nil })
	c.Close()
	if err := result(t, done); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a connection closed meanwhile: %v, want net.ErrClosed", err)
	}
	waitEOF(t, client)
	waitStats(t, e, "the slot to be freed", func(s Stats) bool { return s.Open == 0 })
}

// parkWithWriteWaiting serves a connection whose handler leaves a write
// of size bytes running on another goroutine (the client reads nothing
// yet) and returns Park once that write waits for room, as an HTTP/2
// connection's GOAWAY can when a shutdown claims it as it parks. It
// returns when the connection is parked, with the write's result to come
// on done.
func parkWithWriteWaiting(t *testing.T, size int) (e *Engine, client *net.TCPConn, c *Conn, done <-chan error) {
	t.Helper()
	waiting := make(chan *Conn, 1)
	park := make(chan struct{})
	wrote := make(chan error, 1)
	e, client = served(t, smallSendBuffer(), func(c *Conn) Action {
		c.SetWriteDeadline(time.Now().Add(time.Minute)) // only so that a failure ends
		go func() {
			_, err := c.Write(make([]byte, size))
			wrote <- err
		}()
		waiting <- c
		<-park
		return Park
	})
	c = <-waiting
	testutil.WaitFor(t, "the write to wait", func() bool {
		c.l.mu.Lock()
		defer c.l.mu.Unlock()
		return c.w.waits&waitOut != 0
	})
	close(park)
	waitStats(t, e, "the connection to park", func(s Stats) bool { return s.Parked == 1 })
	return e, client, c, wrote
}

func TestCloseWakesWriteWaitingThroughPark(t *testing.T) {
	t.Parallel()
	// The park must leave the write its waiter, so that a Close (or the
	// loop) still wakes it, and must not give the waiter to another
	// connection meanwhile.
	e, _, c, done := parkWithWriteWaiting(t, 64<<20)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("write on a connection closed after it parked: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waiting when its connection parked was not woken by Close")
	}
	waitStats(t, e, "the slot to be freed", func(s Stats) bool { return s.Open == 0 })
}

func TestWriteWaitingThroughParkGoesOn(t *testing.T) {
	t.Parallel()
	// When the client then reads, the parked registration must still
	// wait for room for the write.
	const size = 8 << 20
	_, client, _, done := parkWithWriteWaiting(t, size)
	read := make(chan error, 1)
	go func() {
		client.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := io.ReadFull(client, make([]byte, size))
		read <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write waiting when its connection parked: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waiting when its connection parked was not woken when the client read")
	}
	if err := <-read; err != nil {
		t.Fatalf("client read: %v", err)
	}
}

func TestReadAndWriteWaitTogether(t *testing.T) {
	t.Parallel()
	// One goroutine waits to read while another waits to write, as an
	// HTTP/2 connection does: the registration is armed for both.
	const size = 16 << 20
	readDone := make(chan error, 1)
	writeDone := make(chan error, 1)
	_, c := served(t, smallSendBuffer(), func(c *Conn) Action {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		go func() {
			buf := make([]byte, 4)
			_, err := io.ReadFull(c, buf)
			if err == nil && string(buf) != "ping" {
				err = errors.New("read " + string(buf))
			}
			readDone <- err
		}()
		_, err := c.Write(make([]byte, size))
		writeDone <- err
		if err := <-readDone; err != nil {
			readDone <- err
			return Close
		}
		readDone <- nil
		return Park
	})
	readN(t, c, 1) // the writer is going; it will have to wait for room
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := io.CopyN(io.Discard, c, size-1); err != nil {
		t.Fatalf("read %d of the response: %v", n, err)
	}
	if err := result(t, writeDone); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := result(t, readDone); err != nil {
		t.Fatalf("read: %v", err)
	}
}

func TestTLSOverOwnSocket(t *testing.T) {
	t.Parallel()
	ca := testutil.NewCA(t, "engine test CA")
	cert := ca.TLSCert(t, testutil.IssueOptions{}, "localhost")
	srv := &tls.Config{Certificates: []tls.Certificate{cert}}
	h := handlerFunc(func(c *Conn) Action {
		if c.TLS() == nil {
			tc := tls.Server(c.Conn, srv)
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if err := tc.Handshake(); err != nil {
				return Close
			}
			c.SetDeadline(time.Time{})
			c.Conn = tc
		}
		buf := make([]byte, 64<<10)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := c.Read(buf)
		c.SetReadDeadline(time.Time{})
		if err != nil {
			return Close
		}
		line := strings.TrimSpace(string(buf[:n]))
		c.Write(bytes.Repeat([]byte(line), 100_000)) // large: writes wait
		return Park
	})
	e := start(t, testConfig(), h)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	c, err := tls.Dial("tcp", e.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, w := range []string{"one", "two"} {
		c.Write([]byte(w + "\n"))
		got := readN(t, c, len(w)*100_000)
		if got != strings.Repeat(w, 100_000) {
			t.Fatalf("answer to %q differs", w)
		}
		waitStats(t, e, "the connection to park", func(s Stats) bool { return s.Parked == 1 && s.Active == 0 })
	}
}

func TestGoPollerMode(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.GoPoller = true
	kind := make(chan bool, 1)
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		if line == "kind" {
			_, isTCP := c.Socket().(*net.TCPConn)
			kind <- isTCP
		}
		return 0, false
	}}
	e := start(t, cfg, h)
	c := dial(t, e)
	roundTrip(t, c, "kind")
	if !<-kind {
		t.Error("with GoPoller the socket is not a *net.TCPConn")
	}
	waitStats(t, e, "the connection to park", func(s Stats) bool { return s.Parked == 1 })
	roundTrip(t, c, "again")
}

// handlerFunc is a Handler from a function.
type handlerFunc func(c *Conn) Action

func (f handlerFunc) Serve(c *Conn) Action { return f(c) }

func TestAddresses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc, listen, dial string
	}{
		{"one address", "127.0.0.1:0", "127.0.0.1"},
		{"wildcard, IPv4 client", "[::]:0", "127.0.0.1"},
		{"wildcard, IPv6 client", "[::]:0", "::1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			type addrs struct{ remote, local string }
			got := make(chan addrs, 1)
			cfg := testConfig()
			cfg.Addr = tc.listen
			h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
				got <- addrs{c.RemoteAddr().String(), c.LocalAddr().String()}
				if ap := c.RemoteAddrPort(); netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String() != c.RemoteAddr().String() {
					t.Errorf("RemoteAddrPort %v, RemoteAddr %v", c.RemoteAddrPort(), c.RemoteAddr())
				}
				return Close, true
			}}
			e, err := Listen(cfg, h, nil)
			if err != nil {
				t.Skipf("listening on %s: %v", tc.listen, err)
			}
			go e.Serve()
			t.Cleanup(func() { e.Close() })
			_, port, _ := net.SplitHostPort(e.Addr().String())
			c, err := net.Dial("tcp", net.JoinHostPort(tc.dial, port))
			if err != nil {
				t.Skipf("dialling %s: %v", tc.dial, err)
			}
			defer c.Close()
			c.Write([]byte("x\n"))
			var a addrs
			select {
			case a = <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("not served")
			}
			if a.remote != c.LocalAddr().String() || a.local != c.RemoteAddr().String() {
				t.Errorf("server sees %s -> %s; client %s -> %s", a.remote, a.local, c.LocalAddr(), c.RemoteAddr())
			}
		})
	}
}

func TestForcedShutdownWakesWaitingRead(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxConns = 1
	waiting := make(chan *Conn, 1)
	done := make(chan error, 1)
	e, client := served(t, cfg, func(c *Conn) Action {
		waiting <- c
		_, err := c.Read(make([]byte, 10)) // the client sends nothing more
		done <- err
		return Park
	})
	c := <-waiting
	testutil.WaitFor(t, "the read to wait", func() bool { return c.fd.wt.Load() != nil })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want a deadline error", err)
	}
	if err := result(t, done); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read during a forced shutdown: %v, want net.ErrClosed", err)
	}
	waitEOF(t, client)
	waitStats(t, e, "every slot freed", func(s Stats) bool { return s.Open == 0 && s.Active == 0 })
}

func TestMaxConnsSlotFreedByCloseWhileWaiting(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxConns = 1
	waiting := make(chan *Conn, 1)
	e, first := served(t, cfg, func(c *Conn) Action {
		waiting <- c
		c.Read(make([]byte, 10))
		return Park // closed meanwhile: the park closes nothing twice
	})
	c := <-waiting
	testutil.WaitFor(t, "the read to wait", func() bool { return c.fd.wt.Load() != nil })
	second := dial(t, e) // waits in the backlog: the one slot is taken
	second.Write([]byte("hello\n"))
	c.Close()
	waitEOF(t, first)
	if got := readN(t, second, len("echo hello\n")); got != "echo hello\n" {
		t.Fatalf("second connection answered %q", got)
	}
	waitStats(t, e, "one connection open", func(s Stats) bool { return s.Open == 1 && s.Parked == 1 })
}
