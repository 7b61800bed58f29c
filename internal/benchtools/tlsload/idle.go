package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// idleResult is what opening the idle connections gave.
type idleResult struct {
	conns    []*tls.Conn // nil where the connection failed
	ok       int64
	failed   int64
	elapsed  time.Duration
	firstErr error
}

// openIdle opens o.n connections, o.conc at a time, each with a full
// handshake and one keep-alive request answered in full.
func openIdle(ctx context.Context, o options) (*idleResult, error) {
	srcs, err := sourceAddrs(o.srcs, o.n, o.perSrc)
	if err != nil {
		return nil, err
	}
	if o.conc < 1 {
		return nil, fmt.Errorf("-c must be positive, not %d", o.conc)
	}
	alpn := []string{"http/1.1"}
	if o.h2 {
		alpn = []string{"h2"}
	}
	cfg := clientConfig(o.serverName, alpn)
	first := exchange(o, 1)
	res := &idleResult{conns: make([]*tls.Conn, o.n)}
	var ok, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < o.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				c, err := openOne(ctx, srcs[i/o.perSrc], o.addr, cfg, first)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				res.conns[i] = c
				ok.Add(1)
			}
		}()
	}
	for i := 0; i < o.n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	res.ok, res.failed, res.elapsed = ok.Load(), failed.Load(), time.Since(start)
	if e := firstErr.Load(); e != nil {
		res.firstErr = *e
	}
	return res, nil
}

// exchange returns the request and answer of the n-th exchange on a
// connection (1: the first): an HTTP/1.1 keep-alive GET, or with -h2 a GET
// on HTTP/2 stream 2n-1 (the first after the preface).
func exchange(o options, n uint32) func(c net.Conn, timeout time.Duration) error {
	if o.h2 {
		return func(c net.Conn, timeout time.Duration) error { return h2RoundTrip(c, 2*n-1, o.addr, timeout) }
	}
	req := httpRequest(o.addr)
	return func(c net.Conn, timeout time.Duration) error { return roundTrip(c, req, timeout) }
}

func openOne(ctx context.Context, src, target string, cfg *tls.Config, rt func(net.Conn, time.Duration) error) (*tls.Conn, error) {
	c, err := dialTLS(ctx, src, target, cfg)
	if err != nil {
		return nil, err
	}
	if err := rt(c, 15*time.Second); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// probeIdle sends a second request on up to n connections spread over the
// live ones: the server must still have them open and answer.
func probeIdle(conns []*tls.Conn, n int, rt func(net.Conn, time.Duration) error) (ok, of int) {
	var live []*tls.Conn
	for _, c := range conns {
		if c != nil {
			live = append(live, c)
		}
	}
	if n <= 0 || len(live) == 0 {
		return 0, 0
	}
	step := max(len(live)/n, 1)
	for i := 0; i < len(live) && of < n; i += step {
		of++
		if rt(live[i], 5*time.Second) == nil {
			ok++
		}
	}
	return ok, of
}

// closeAll resets every connection (SO_LINGER 0: no TIME_WAIT left behind).
func closeAll(conns []*tls.Conn) {
	for _, c := range conns {
		if c == nil {
			continue
		}
		if tc, isTCP := c.NetConn().(*net.TCPConn); isTCP {
			tc.SetLinger(0)
		}
		c.NetConn().Close()
	}
}

// runIdle opens the connections, reports READY, holds them until stdin
// reaches EOF, a SIGTERM/SIGINT arrives or o.hold passes, then probes a
// sample and closes them all.
func runIdle(o options, stdin io.Reader) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.openTimeout)
	defer cancel()
	res, err := openIdle(ctx, o)
	if err != nil {
		return err
	}
	if res.firstErr != nil {
		fmt.Fprintf(os.Stderr, "first error: %v\n", res.firstErr)
	}
	fmt.Printf("READY ok=%d failed=%d secs=%.2f\n", res.ok, res.failed, res.elapsed.Seconds())
	fmt.Fprintf(os.Stderr, "released: %s\n", waitRelease(stdin, o.hold))
	ok, of := probeIdle(res.conns, o.probe, exchange(o, 2))
	fmt.Printf("PROBE ok=%d of=%d\n", ok, of)
	closeAll(res.conns)
	fmt.Println("CLOSED")
	return nil
}

// waitRelease blocks until stdin ends, a signal comes or hold passes, and
// says which.
func waitRelease(stdin io.Reader, hold time.Duration) string {
	eof := make(chan struct{})
	go func() {
		io.Copy(io.Discard, stdin)
		close(eof)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	select {
	case <-eof:
		return "stdin closed"
	case s := <-sig:
		return "signal " + s.String()
	case <-time.After(hold):
		return "hold time expired"
	}
}
