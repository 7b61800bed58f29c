package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/edgeway/edgeway/internal/testgrpc"
)

// result is what a load run measured.
type result struct {
	calls, errors int
	secs          float64
	p50, p99      time.Duration
	firstErr      error
}

// String is the RESULT line the bench script reads.
func (r result) String() string {
	s := fmt.Sprintf("RESULT calls=%d errors=%d secs=%.2f calls_per_sec=%.0f p50_ms=%.3f p99_ms=%.3f",
		r.calls, r.errors, r.secs, float64(r.calls)/r.secs, ms(r.p50), ms(r.p99))
	if r.firstErr != nil {
		s += " first_error=" + strings.ReplaceAll(r.firstErr.Error(), " ", "_")
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// worker is one caller's tally; each worker owns its own, merged at the end.
type worker struct {
	lat      []time.Duration
	errors   int
	firstErr error
}

// load runs o.workers callers over o.channels connections for o.duration.
func load(o options) (result, error) {
	if o.workers < 1 || o.channels < 1 || o.size < 0 {
		return result{}, fmt.Errorf("load: -workers and -channels must be at least 1, -size not negative")
	}
	conns, err := dial(o)
	if err != nil {
		return result{}, err
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	msg := bytes.Repeat([]byte{'x'}, o.size)
	ws := make([]worker, o.workers)
	start := time.Now()
	end := start.Add(o.duration)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Go(func() { ws[i].run(conns[i%len(conns)], msg, end, o.timeout) })
	}
	wg.Wait()
	return merge(ws, time.Since(start)), nil
}

// dial opens the channels and waits until each is connected, so that
// connection setup is not counted in the calls' latency.
func dial(o options) ([]*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if o.tls {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(testgrpc.Codec{})),
	}
	if o.window > 0 {
		opts = append(opts, grpc.WithInitialWindowSize(int32(o.window)), grpc.WithInitialConnWindowSize(int32(o.window)))
	}
	var conns []*grpc.ClientConn
	for range o.channels {
		c, err := grpc.NewClient(o.addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("load: dialing %s: %w", o.addr, err)
		}
		conns = append(conns, c)
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		var out []byte
		err = c.Invoke(ctx, testgrpc.Unary, []byte("warm"), &out)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("load: first call to %s: %w", o.addr, err)
		}
	}
	return conns, nil
}

// run calls Unary with msg until end, one call at a time.
func (w *worker) run(c *grpc.ClientConn, msg []byte, end time.Time, timeout time.Duration) {
	var out []byte
	for {
		t0 := time.Now()
		if !t0.Before(end) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err := c.Invoke(ctx, testgrpc.Unary, msg, &out)
		cancel()
		if err == nil && !bytes.Equal(out, msg) {
			err = fmt.Errorf("answer of %d bytes is not the message sent", len(out))
		}
		if err != nil {
			w.errors++
			if w.firstErr == nil {
				w.firstErr = err
			}
			continue
		}
		w.lat = append(w.lat, time.Since(t0))
	}
}

// merge adds the workers' tallies up; the percentiles are over the
// successful calls.
func merge(ws []worker, elapsed time.Duration) result {
	r := result{secs: elapsed.Seconds()}
	var all []time.Duration
	for _, w := range ws {
		all = append(all, w.lat...)
		r.errors += w.errors
		if r.firstErr == nil {
			r.firstErr = w.firstErr
		}
	}
	r.calls = len(all)
	if len(all) > 0 {
		slices.Sort(all)
		r.p50 = all[len(all)*50/100]
		r.p99 = all[min(len(all)-1, len(all)*99/100)]
	}
	return r
}
