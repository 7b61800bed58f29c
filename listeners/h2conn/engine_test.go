package h2conn

import (
	"bytes"
	"context"
	"net"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/engine"
)

// engineServer serves h2c with prior knowledge on a loopback engine
// listener, so that its connections park (ServeEngine, Resume).
type engineServer struct {
	srv  *Server
	eng  *engine.Engine
	addr string
	wrap func(net.Conn) net.Conn // nil: the socket as it is
}

func (es *engineServer) Serve(c *engine.Conn) engine.Action {
	if a, ok := Resume(c); ok {
		return a
	}
	nc := net.Conn(c.Conn)
	if es.wrap != nil {
		nc = es.wrap(nc)
	}
	return es.srv.ServeEngine(c, nc, nil)
}

func startEngine(t *testing.T, cfg Config, wrap func(net.Conn) net.Conn) *engineServer {
	t.Helper()
	es := &engineServer{srv: New(cfg), wrap: wrap}
	e, err := engine.Listen(engine.Config{Addr: "127.0.0.1:0"}, es, nil)
	if err != nil {
		t.Fatal(err)
	}
	es.eng, es.addr = e, e.Addr().String()
	served := make(chan struct{})
	go func() {
		defer close(served)
		defer panics.Recover("test engine")
		e.Serve()
	}()
	t.Cleanup(func() {
		// Bounded: a connection hung by a bug must fail the test, not
		// hang the package.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer panics.Recover("test shutdown")
			es.srv.Shutdown(ctx)
		}()
		select {
		case <-done:
		case <-time.After(testTimeout): // Shutdown's own bound is 2 s: this only catches a hang
			t.Error("the server's Shutdown hung")
		}
		e.Close()
		<-served
	})
	return es
}

// conn returns the server's one connection.
func (es *engineServer) conn(t *testing.T) *conn {
	t.Helper()
	var c *conn
	testutil.Eventually(t, testTimeout, func() bool {
		es.srv.mu.Lock()
		defer es.srv.mu.Unlock()
		for k := range es.srv.conns {
			c = k
		}
		return c != nil
	}, "no connection")
	return c
}

// panicConn makes the writer panic in SetReadDeadline, which it calls
// with c.mu held (wakeToParkLocked), once armed: its Write waits until
// the connection's stream is done, so that the writer, and not the
// stream's end, is the one that finds the connection idle.
type panicConn struct {
	net.Conn
	armed atomic.Bool
	c     atomic.Pointer[conn]
}

func (p *panicConn) Write(b []byte) (int, error) {
	if c := p.c.Load(); c != nil && p.armed.Load() {
		testutil.Poll(testTimeout, func() bool { // the test fails on what follows if it does not hold
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.handlers == 0 && len(c.streams) == 0 && c.deadline != dlPark
		})
	}
	return p.Conn.Write(b)
}

func (p *panicConn) SetReadDeadline(t time.Time) error {
	if p.armed.Load() && bytes.Contains(debug.Stack(), []byte("(*conn).writeLoop")) {
		p.armed.Store(false)
		panic("test: the writer panics with c.mu held")
	}
	return p.Conn.SetReadDeadline(t)
}

// TestWriterPanicEndsConnection: a panic in the writer while it holds
// the connection's lock ends the connection (the client reads its end)
// and leaves nothing hung: the server's Shutdown and the engine's count
// go on.
func TestWriterPanicEndsConnection(t *testing.T) {
	pcs := make(chan *panicConn, 1)
	var pc atomic.Pointer[panicConn]
	es := startEngine(t, Config{Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		pc.Load().armed.Store(true)
		w.WriteHead(200, nil, 2)
		w.Write([]byte("ok"))
	})}, func(nc net.Conn) net.Conn {
		p := &panicConn{Conn: nc}
		pcs <- p
		return p
	})
	before := panics.Count("h2 writer")
	rc := dialRaw(t, es.addr)
	p := <-pcs
	p.c.Store(es.conn(t))
	pc.Store(p)
	rc.get(1, "/", true)
	for f := rc.next(); f != nil; f = rc.next() {
	}
	testutil.Eventually(t, testTimeout, func() bool { return panics.Count("h2 writer") == before+1 }, "the panic was not reported")
	testutil.Eventually(t, testTimeout, func() bool {
		es.srv.mu.Lock()
		defer es.srv.mu.Unlock()
		return len(es.srv.conns) == 0 && es.eng.Stats().Open == 0
	}, "the connection did not end: %+v", es.eng.Stats())
}

// waitParked waits until the engine holds n parked connections and
// serves none.
func (es *engineServer) waitParked(t *testing.T, n int) {
	t.Helper()
	testutil.Eventually(t, testTimeout, func() bool {
		st := es.eng.Stats()
		return st.Parked == n && st.Active == 0
	}, "want %d parked connections: %+v", n, es.eng.Stats())
}

// answered reads rc's frames until stream id's END_STREAM.
func (rc *rawClient) answered(id uint32) {
	rc.t.Helper()
	for {
		f := rc.next()
		if f == nil {
			rc.t.Fatalf("the connection ended before stream %d's answer", id)
		}
		if f.Header().StreamID == id && f.Header().Flags.Has(http2.FlagDataEndStream) {
			return
		}
	}
}

// TestParkedIdleTimeoutOutOfOrder: the parked connections are in the
// order they parked, which is not the order of their idle starts: a
// connection served for a PING parks again, behind connections whose
// idle time began after its own. It still gets its idle GOAWAY when
// its own timeout is due, not once those ahead of it are.
func TestParkedIdleTimeoutOutOfOrder(t *testing.T) {
	const idle = 2 * time.Second
	es := startEngine(t, Config{IdleTimeout: idle, Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		w.WriteHead(200, nil, 2)
		w.Write([]byte("ok"))
	})}, nil)
	a := dialRaw(t, es.addr)
	a.get(1, "/", true)
	a.answered(1)
	aIdle := time.Now() // A's idle time began before this
	es.waitParked(t, 1)

	// B is served, then parks, until its idle time begins well after
	// A's; each round takes at least parkGrace.
	b := dialRaw(t, es.addr)
	var bIdle time.Time // B's idle time began after this
	for id := uint32(1); time.Since(aIdle) < idle/3; id += 2 {
		bIdle = time.Now()
		b.get(id, "/", true)
		b.answered(id)
		es.waitParked(t, 2)
	}

	// A is served for a PING and parks again: behind B. (On a machine
	// so slow that A's timeout came first, its GOAWAY may come before
	// the PING's answer.)
	a.write(func() error { return a.fr.WritePing(false, [8]byte{1}) })
	a.c.SetReadDeadline(time.Now().Add(testTimeout))
	for parked := false; ; {
		f, err := a.fr.ReadFrame()
		if err != nil {
			t.Fatalf("no GOAWAY on A: %v", err)
		}
		if _, ok := f.(*http2.GoAwayFrame); ok {
			break
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && !parked {
			es.waitParked(t, 2)
			parked = true
		}
	}
	got := time.Now()
	if bDue := bIdle.Add(idle - idleMargin(idle)); !got.Before(bDue) {
		t.Errorf("A's GOAWAY came %v after its idle time began, when B's was due (%v after A's); its own was due %v after",
			got.Sub(aIdle), bDue.Sub(aIdle), idle-idleMargin(idle))
	}
}

// reportConn tells when the tunnel over it ended.
type reportConn struct {
	net.Conn
	ended chan struct{}
}

func (r *reportConn) TunnelStarted(func())          {}
func (r *reportConn) TunnelEnded(httpmsg.TunnelEnd) { close(r.ended) }

// TestTunnelEndParks: a WebSocket stream (RFC 8441) whose tunnel ends
// before its handler returns was the last stream: the connection parks
// once the handler is done, as after any other stream.
func TestTunnelEndParks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		defer panics.Recover("test upstream")
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close() // the upstream ends the tunnel at once
		}
	}()
	var hcOf atomic.Pointer[conn]
	es := startEngine(t, Config{Handler: handlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
		key := r.Header.Get("sec-websocket-key")
		w.WriteHead(101, httpmsg.Header{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"},
			{Name: "Sec-WebSocket-Accept", Value: httpmsg.WebSocketAccept(key)}}, -1)
		up, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Error(err)
			return
		}
		rc := &reportConn{Conn: up, ended: make(chan struct{})}
		if err := w.Tunnel(rc, nil); err != nil {
			t.Error(err)
			return
		}
		// The handler returns after the tunnel ended and the writer
		// sent its last frames, with no park due: its end is the last.
		select {
		case <-rc.ended:
		case <-time.After(testTimeout):
			t.Error("the tunnel did not end")
		}
		testutil.Poll(testTimeout, func() bool { // the test fails on what follows if it does not hold
			hc := hcOf.Load()
			hc.mu.Lock()
			defer hc.mu.Unlock()
			return len(hc.streams) == 0 && len(hc.out) == 0 && !hc.writing && hc.deadline != dlPark
		})
	})}, nil)
	rc := dialRaw(t, es.addr)
	hcOf.Store(es.conn(t))
	rc.wmu.Lock()
	rc.hbuf.Reset()
	for _, f := range [][2]string{{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "http"}, {":authority", "example.com"}, {":path", "/ws"}} {
		rc.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	blk := bytes.Clone(rc.hbuf.Bytes())
	rc.wmu.Unlock()
	rc.write(func() error {
		return rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: blk, EndHeaders: true})
	})
	for {
		f := rc.next()
		if f == nil {
			t.Fatal("the connection ended")
		}
		if _, ok := f.(*http2.RSTStreamFrame); ok {
			break // END_STREAM came, then RST_STREAM NO_ERROR: the client still had its side open
		}
	}
	es.waitParked(t, 1)
}
