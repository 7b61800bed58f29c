package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// streamResult is what one stream run gave.
type streamResult struct {
	bytes   int64
	elapsed time.Duration // first write to the sink's count, handshake excluded
}

// mbPerSec is throughput in MB/s (10^6 bytes per second).
func (r *streamResult) mbPerSec() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.bytes) / 1e6 / r.elapsed.Seconds()
}

// streamTo sends total bytes over one TLS connection in writes of size
// bytes, sends close_notify and waits for the sink's count, which must
// match.
func streamTo(ctx context.Context, addr, serverName string, total, size int64) (*streamResult, error) {
	c, err := dialTLS(ctx, "127.0.0.1", addr, clientConfig(serverName, nil))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	buf := make([]byte, size)
	start := time.Now()
	for sent := int64(0); sent < total; {
		chunk := buf[:min(size, total-sent)]
		if _, err := c.Write(chunk); err != nil {
			return nil, fmt.Errorf("writing after %d bytes: %w", sent, err)
		}
		sent += int64(len(chunk))
	}
	if err := c.CloseWrite(); err != nil {
		return nil, fmt.Errorf("sending close_notify: %w", err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && !(err == io.EOF && line != "") {
		return nil, fmt.Errorf("reading the sink's count: %w", err)
	}
	got, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("sink answered %q: %w", line, err)
	}
	if got != total {
		return nil, fmt.Errorf("sink counted %d bytes, sent %d", got, total)
	}
	return &streamResult{bytes: total, elapsed: time.Since(start)}, nil
}

func runStream(o options) error {
	total, err := parseSize(o.bytes)
	if err != nil {
		return fmt.Errorf("-bytes: %w", err)
	}
	size, err := parseSize(o.writeSize)
	if err != nil {
		return fmt.Errorf("-write-size: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := streamTo(ctx, o.addr, o.serverName, total, size)
	if err != nil {
		return err
	}
	fmt.Printf("RESULT bytes=%d secs=%.3f mb_per_sec=%.1f\n", res.bytes, res.elapsed.Seconds(), res.mbPerSec())
	return nil
}
