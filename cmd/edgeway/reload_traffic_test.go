package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/websocket"
)

// traffic is the steady load of the reload-under-load test: keep-alive
// clients, clients that open a new connection for every request, and
// WebSockets exchanging a message every 100 ms. It counts every failure.
type traffic struct {
	requests, failed atomic.Int64
	messages, cut    atomic.Int64
	// dials counts the connections the keep-alive clients opened (one
	// each, more when Go's transport dials while the last connection is
	// on its way back to its pool); serverClosed those edgeway ended
	// (an end of stream or a reset on a connection the client had not
	// closed).
	dials, serverClosed atomic.Int64

	mu        sync.Mutex
	errors    []string        // the first few failures, for the report
	latencies []time.Duration // of every HTTP request that succeeded

	wg sync.WaitGroup
}

func (tr *traffic) fail(counter *atomic.Int64, format string, args ...any) {
	counter.Add(1)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.errors) < 10 {
		tr.errors = append(tr.errors, fmt.Sprintf(format, args...))
	}
}

// httpClients runs n clients, each on its own transport, requesting paths
// in turn until ctx ends. With keepAlive each holds one connection for the
// whole test; without, each request dials anew. The 2 ms pause between
// requests paces the load so that the machine is not saturated.
func (tr *traffic) httpClients(ctx context.Context, base string, n int, keepAlive bool, paths ...string) {
	for i := range n {
		dialer := &net.Dialer{Timeout: 5 * time.Second}
		tp := &http.Transport{
			DisableKeepAlives:   !keepAlive,
			MaxIdleConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dialer.DialContext(ctx, network, addr)
				if !keepAlive || err != nil {
					return c, err
				}
				tr.dials.Add(1)
				return &watchedConn{Conn: c, byServer: &tr.serverClosed}, nil
			},
		}
		c := &http.Client{Transport: tp, Timeout: 10 * time.Second}
		tr.wg.Go(func() {
			defer tp.CloseIdleConnections()
			for k := 0; ctx.Err() == nil; k++ {
				tr.get(c, base+paths[(i+k)%len(paths)])
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
}

// watchedConn is a keep-alive client's connection: it counts, once, an
// end of stream or a reset from edgeway before the client closed it (Go's
// transport reads every connection it holds, idle ones too).
type watchedConn struct {
	net.Conn
	closed   atomic.Bool
	counted  atomic.Bool
	byServer *atomic.Int64
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && !c.closed.Load() && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) &&
		c.counted.CompareAndSwap(false, true) {
		c.byServer.Add(1)
	}
	return n, err
}

func (c *watchedConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

func (tr *traffic) get(c *http.Client, url string) {
	tr.requests.Add(1)
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		tr.fail(&tr.failed, "GET %s: %v", url, err)
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode/100 != 2 {
		tr.fail(&tr.failed, "GET %s: status %d, body: %v", url, resp.StatusCode, err)
		return
	}
	d := time.Since(start)
	tr.mu.Lock()
	tr.latencies = append(tr.latencies, d)
	tr.mu.Unlock()
}

// webSockets opens n WebSockets to url (all open before it returns) and
// has each send a message every 100 ms and read its echo until ctx ends.
func (tr *traffic) webSockets(ctx context.Context, url, origin string, n int) error {
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		ws, err := websocket.Dial(url, "", origin)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return fmt.Errorf("websocket %d: %w", i, err)
		}
		conns[i] = ws
	}
	for i, ws := range conns {
		tr.wg.Go(func() {
			defer ws.Close()
			tick := time.NewTicker(100 * time.Millisecond) // the pace of the exchange
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if err := tr.echo(ws, fmt.Sprintf("ws%d-%d", i, k)); err != nil {
					tr.fail(&tr.cut, "websocket %d, message %d: %v", i, k, err)
					return
				}
			}
		})
	}
	return nil
}

func (tr *traffic) echo(ws *websocket.Conn, msg string) error {
	ws.SetDeadline(time.Now().Add(5 * time.Second))
	if err := websocket.Message.Send(ws, msg); err != nil {
		return err
	}
	var got string
	if err := websocket.Message.Receive(ws, &got); err != nil {
		return err
	}
	if got != msg {
		return fmt.Errorf("echo %q, sent %q", got, msg)
	}
	tr.messages.Add(1)
	return nil
}
