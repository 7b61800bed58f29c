//go:build linux

package engine

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// upstream accepts the tunnels' upstream connections.
type upstream struct {
	ln    net.Listener
	conns chan net.Conn
}

func newUpstream(t testing.TB) *upstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{ln: ln, conns: make(chan net.Conn, 4096)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-u.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return u
}

func (u *upstream) next(t testing.TB) net.Conn {
	t.Helper()
	select {
	case c := <-u.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no upstream connection")
		return nil
	}
}

// tunnelHandler turns the line "tunnel" into a tunnel to u with pre-read
// bytes on both sides.
func tunnelHandler(u *upstream) *lineHandler {
	return wrappedTunnelHandler(u, func(up *net.TCPConn) net.Conn { return up })
}

// wrappedTunnelHandler is tunnelHandler with the upstream connection
// given to the engine as wrap makes it.
func wrappedTunnelHandler(u *upstream, wrap func(*net.TCPConn) net.Conn) *lineHandler {
	return &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		if line != "tunnel" {
			return 0, false
		}
		up, err := net.Dial("tcp", u.ln.Addr().String())
		if err != nil {
			return Close, true
		}
		c.Tunnel(wrap(up.(*net.TCPConn)), []byte("<to-up>"), []byte("<to-client>"))
		return Park, true
	}}
}

// openTunnel returns the client and upstream ends of a new tunnel, past
// the pre-read bytes.
func openTunnel(t testing.TB, e *Engine, u *upstream) (client *net.TCPConn, up net.Conn) {
	t.Helper()
	client = dial(t, e)
	client.Write([]byte("tunnel\n"))
	if got := readN(t, client, len("<to-client>")); got != "<to-client>" {
		t.Fatalf("client got %q first", got)
	}
	up = u.next(t)
	if got := readN(t, up, len("<to-up>")); got != "<to-up>" {
		t.Fatalf("upstream got %q first", got)
	}
	return client, up
}

func TestTunnelBothWaysAndHalfClose(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := start(t, testConfig(), tunnelHandler(u))
	client, up := openTunnel(t, e, u)
	waitStats(t, e, "a tunnel", func(s Stats) bool { return s.Tunnels == 1 && s.Active == 0 && s.Parked == 0 })

	client.Write([]byte("ping"))
	if got := readN(t, up, 4); got != "ping" {
		t.Errorf("upstream got %q", got)
	}
	up.Write([]byte("pong"))
	if got := readN(t, client, 4); got != "pong" {
		t.Errorf("client got %q", got)
	}
	client.CloseWrite()
	waitEOF(t, up) // the client's FIN reached upstream
	up.Write([]byte("late"))
	if got := readN(t, client, 4); got != "late" {
		t.Errorf("after half-close the client got %q", got)
	}
	up.Close()
	waitEOF(t, client) // half-closed: the client may still send
	client.Close()
	waitStats(t, e, "the tunnel to end", func(s Stats) bool { return s.Tunnels == 0 && s.Open == 0 })
}

func TestParkedTunnelsHoldNoGoroutine(t *testing.T) {
	const n = 50
	u := newUpstream(t)
	e := start(t, testConfig(), tunnelHandler(u))
	base := runtime.NumGoroutine()
	type pair struct{ client, up net.Conn }
	pairs := make([]pair, n)
	for i := range pairs {
		pairs[i].client, pairs[i].up = openTunnel(t, e, u)
	}
	waitStats(t, e, "every tunnel", func(s Stats) bool { return s.Tunnels == n && s.Active == 0 })
	testutil.WaitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= base+5 })
	for _, p := range pairs {
		p.up.Write([]byte("x"))
		if readN(t, p.client, 1) != "x" {
			t.Fatal("a parked tunnel lost a byte")
		}
	}
}

func TestTunnelMiB(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := start(t, testConfig(), tunnelHandler(u))
	client, up := openTunnel(t, e, u)
	want := make([]byte, 1<<20)
	rand.Read(want)
	var wg sync.WaitGroup
	for _, p := range []struct{ from, to net.Conn }{{client, up}, {up, client}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			go func() {
				p.from.Write(want)
				p.from.(interface{ CloseWrite() error }).CloseWrite()
			}()
			p.to.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(p.to)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("received %d bytes (%v), want the 1 MiB sent intact", len(got), err)
			}
		}()
	}
	wg.Wait()
	waitStats(t, e, "the tunnel to end", func(s Stats) bool { return s.Tunnels == 0 && s.Open == 0 })
}

func TestShutdownWaitsForTunnel(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	e := start(t, testConfig(), tunnelHandler(u))
	client, up := openTunnel(t, e, u)
	done := shutdownAsync(e, t.Context())
	client.Write([]byte("during"))
	if got := readN(t, up, 6); got != "during" {
		t.Errorf("upstream got %q during shutdown", got)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a tunnel open", err)
	default:
	}
	client.Close()
	up.Close()
	if err := <-done; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

// opaqueConn hides the *net.TCPConn's file descriptor, as a TLS
// connection would.
type opaqueConn struct{ net.Conn }

func TestTunnelWithoutDescriptor(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	h := &lineHandler{hook: func(c *Conn, line string) (Action, bool) {
		up, err := net.Dial("tcp", u.ln.Addr().String())
		if err != nil {
			return Close, true
		}
		c.Tunnel(opaqueConn{up}, nil, []byte("<to-client>"))
		return Park, true
	}}
	e := start(t, testConfig(), h)
	client := dial(t, e)
	client.Write([]byte("tunnel\n"))
	readN(t, client, len("<to-client>"))
	up := u.next(t)
	client.Write([]byte("ping"))
	if got := readN(t, up, 4); got != "ping" {
		t.Errorf("upstream got %q", got)
	}
	up.Write([]byte("pong"))
	if got := readN(t, client, 4); got != "pong" {
		t.Errorf("client got %q", got)
	}
	up.Close()
	waitEOF(t, client) // half-closed: the client may still send
	client.Close()
	waitStats(t, e, "the tunnel to end", func(s Stats) bool { return s.Tunnels == 0 && s.Open == 0 })
}

// TestTunnelQuietAfterBulk: a tunnel that moved a bulk burst (through the
// splice path, with a write deadline while it waited) and then stayed
// quiet for longer than the tunnel write timeout still carries a small
// message: the timeout bounds one write, it does not expire the tunnel.
func TestTunnelQuietAfterBulk(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	cfg := testConfig()
	cfg.TunnelWriteTimeout = 50 * time.Millisecond
	e := start(t, cfg, tunnelHandler(u))
	client, up := openTunnel(t, e, u)
	bulk := make([]byte, 4<<20)
	go client.Write(bulk)
	up.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(up, make([]byte, len(bulk))); err != nil {
		t.Fatalf("bulk: %v", err)
	}
	waitStats(t, e, "the tunnel to park", func(s Stats) bool { return s.Active == 0 })
	deadline := time.Now().Add(4 * cfg.TunnelWriteTimeout)
	for time.Now().Before(deadline) { // the quiet time is what is tested
		time.Sleep(deadline.Sub(time.Now()))
	}
	for _, p := range []struct{ from, to net.Conn }{{client, up}, {up, client}} {
		io.WriteString(p.from, "ping\n")
		p.to.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 5)
		if _, err := io.ReadFull(p.to, b); err != nil || string(b) != "ping\n" {
			t.Fatalf("after a quiet spell, %s -> %s: %q, %v (stats %+v)", p.from.LocalAddr(), p.to.LocalAddr(), b, err, e.Stats())
		}
	}
}

// reportingUp is an upstream connection that wants its tunnel's end
// (httpmsg.TunnelReporter), as the router's are.
type reportingUp struct {
	*net.TCPConn
	end chan httpmsg.TunnelEnd
}

func (r *reportingUp) TunnelStarted(func())            {}
func (r *reportingUp) TunnelEnded(e httpmsg.TunnelEnd) { r.end <- e }

// TestTunnelEndByReset: a server that resets the connection (closing
// with unread bytes, or SO_LINGER 0) ended the tunnel: the end is
// reported as server_closed, not as an error of edgeway's; a client's
// FIN is client_closed.
func TestTunnelEndByReset(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	ends := make(chan httpmsg.TunnelEnd, 2)
	e := start(t, testConfig(), wrappedTunnelHandler(u, func(up *net.TCPConn) net.Conn {
		return &reportingUp{TCPConn: up, end: ends}
	}))
	waitEnd := func() httpmsg.TunnelEnd {
		t.Helper()
		select {
		case end := <-ends:
			return end
		case <-time.After(10 * time.Second):
			t.Fatal("the tunnel's end was never reported")
			return httpmsg.TunnelEnd{}
		}
	}

	client, up := openTunnel(t, e, u)
	up.(*net.TCPConn).SetLinger(0)
	up.Close() // RST
	if end := waitEnd(); end.How != httpmsg.TunnelServerClosed {
		t.Errorf("a server's reset ended the tunnel as %q, want %q", end.How, httpmsg.TunnelServerClosed)
	}
	client.Close()

	client, up = openTunnel(t, e, u)
	client.Close()
	waitEOF(t, up)
	up.Close()
	if end := waitEnd(); end.How != httpmsg.TunnelClientClosed {
		t.Errorf("a client's close ended the tunnel as %q, want %q", end.How, httpmsg.TunnelClientClosed)
	}
}

// handingUp is an upstream connection that hands its socket over
// (httpmsg.TunnelSocket) and follows its tunnel, as the router's do.
type handingUp struct {
	*net.TCPConn
	handed atomic.Bool
	closes atomic.Int32
	end    chan httpmsg.TunnelEnd
}

func (h *handingUp) TunnelSocket() *net.TCPConn {
	h.handed.Store(true)
	return h.TCPConn
}
func (h *handingUp) TunnelStarted(func())            {}
func (h *handingUp) TunnelEnded(e httpmsg.TunnelEnd) { h.end <- e }
func (h *handingUp) Close() error                    { h.closes.Add(1); return nil }

// TestTunnelTakesOverHandedSocket: an upstream socket handed over is the
// engine's to carry and to close: bytes go both ways (a burst that fills
// the upstream's buffers waits on the engine's loop), the client's end of
// stream reaches the upstream, and when the tunnel ends the wrapper is
// told and closed once and no descriptor of the socket is left open.
func TestTunnelTakesOverHandedSocket(t *testing.T) {
	t.Parallel()
	u := newUpstream(t)
	var hu *handingUp
	var inode string
	ready := make(chan struct{})
	e := start(t, testConfig(), wrappedTunnelHandler(u, func(up *net.TCPConn) net.Conn {
		hu = &handingUp{TCPConn: up, end: make(chan httpmsg.TunnelEnd, 1)}
		inode = socketInode(t, up)
		close(ready)
		return hu
	}))
	client, up := openTunnel(t, e, u)
	<-ready
	// Tunnels counts the tunnel before the engine takes the socket over:
	// wait for both.
	waitStats(t, e, "the engine to take the upstream socket over and the tunnel to park", func(s Stats) bool {
		return s.Tunnels == 1 && s.Active == 0 && hu.handed.Load()
	})
	bulk := make([]byte, 4<<20)
	rand.Read(bulk)
	go client.Write(bulk)
	up.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(bulk))
	if _, err := io.ReadFull(up, got); err != nil || !bytes.Equal(got, bulk) {
		t.Fatalf("upstream got the 4 MiB burst: %v, intact %v", err, bytes.Equal(got, bulk))
	}
	up.Write([]byte("pong"))
	if got := readN(t, client, 4); got != "pong" {
		t.Errorf("client got %q", got)
	}
	client.Close()
	waitEOF(t, up)
	up.Close()
	select {
	case end := <-hu.end:
		if end.How != httpmsg.TunnelClientClosed || end.ToUpstream != int64(len("<to-up>")+len(bulk)) || end.ToClient != int64(len("<to-client>")+4) {
			t.Errorf("reported %+v", end)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tunnel's end was never reported")
	}
	waitStats(t, e, "the tunnel to end", func(s Stats) bool { return s.Tunnels == 0 && s.Open == 0 })
	if n := hu.closes.Load(); n != 1 {
		t.Errorf("the wrapper was closed %d times, want 1", n)
	}
	testutil.WaitFor(t, "the upstream socket's descriptors to close", func() bool { return !fdOpen(t, inode) })
}

// socketInode names c's socket as /proc/self/fd shows it ("socket:[N]").
func socketInode(t testing.TB, c *net.TCPConn) string {
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var link string
	raw.Control(func(fd uintptr) { link, err = os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fd))) })
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// fdOpen reports whether a descriptor of this process refers to inode.
func fdOpen(t testing.TB, inode string) bool {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + ent.Name()); err == nil && l == inode {
			return true
		}
	}
	return false
}
