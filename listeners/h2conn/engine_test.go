package h2conn

import (
	"bytes"
	"context"
	"net"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

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
		case <-time.After(3 * time.Second):
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
		deadline := time.Now().Add(testTimeout)
		for time.Now().Before(deadline) {
			c.mu.Lock()
			idle := c.handlers == 0 && len(c.streams) == 0 && c.deadline != dlPark
			c.mu.Unlock()
			if idle {
				break
			}
			time.Sleep(time.Millisecond) // polling interval, not a wait for an event
		}
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
