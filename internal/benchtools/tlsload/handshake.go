package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// handshakeSources is how many loopback source addresses the handshake
// mode rotates over, so tens of thousands of short connections never run
// short of ephemeral ports.
const handshakeSources = 16

// hsResult is what a handshake run gave.
type hsResult struct {
	ok, failed int64
	elapsed    time.Duration
	firstErr   error
}

// rate is completed handshakes per second.
func (r *hsResult) rate() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// handshakeLoad runs o.conc workers for o.duration; each repeatedly opens a
// connection, does a full handshake (and with o.withReq one request), then
// closes cleanly so the server finishes its side too.
func handshakeLoad(ctx context.Context, o options) (*hsResult, error) {
	if o.conc < 1 || o.duration <= 0 {
		return nil, fmt.Errorf("-c and -d must be positive (got %d, %s)", o.conc, o.duration)
	}
	srcs, err := sourceAddrs(o.srcs, handshakeSources, 1)
	if err != nil {
		return nil, err
	}
	cfg := clientConfig(o.serverName, []string{"http/1.1"})
	req := httpRequest(o.addr)
	var ok, failed, next atomic.Int64
	var firstErr atomic.Pointer[error]
	ctx, cancel := context.WithTimeout(ctx, o.duration+15*time.Second)
	defer cancel()
	start := time.Now()
	deadline := start.Add(o.duration)
	var wg sync.WaitGroup
	for w := 0; w < o.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				src := srcs[int(next.Add(1))%len(srcs)]
				if err := oneHandshake(ctx, src, o.addr, cfg, req, o.withReq); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	res := &hsResult{ok: ok.Load(), failed: failed.Load(), elapsed: time.Since(start)}
	if e := firstErr.Load(); e != nil {
		res.firstErr = *e
	}
	return res, nil
}

func oneHandshake(ctx context.Context, src, target string, cfg *tls.Config, req []byte, withReq bool) error {
	c, err := dialTLS(ctx, src, target, cfg)
	if err != nil {
		return err
	}
	if withReq {
		if err := roundTrip(c, req, 10*time.Second); err != nil {
			c.Close()
			return err
		}
	}
	return closeClean(c, 5*time.Second)
}

func runHandshake(o options) error {
	res, err := handshakeLoad(context.Background(), o)
	if err != nil {
		return err
	}
	if res.firstErr != nil {
		fmt.Fprintf(os.Stderr, "first error: %v\n", res.firstErr)
	}
	fmt.Printf("RESULT handshakes=%d failed=%d secs=%.2f hs_per_sec=%.1f\n",
		res.ok, res.failed, res.elapsed.Seconds(), res.rate())
	return nil
}
