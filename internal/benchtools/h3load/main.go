// Command h3load is an HTTP/3 load generator for scripts/bench-h3.sh: C
// QUIC connections, M requests in flight on each, GET of one URL for a
// fixed duration; it prints requests per second (h2load has no HTTP/3 in
// Debian). The client is quic-go's http3.Transport, one per connection.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go/http3"
)

func main() {
	url := flag.String("url", "", "URL to GET (https://host:port/path)")
	conns := flag.Int("c", 4, "QUIC connections")
	streams := flag.Int("m", 16, "requests in flight per connection")
	dur := flag.Duration("d", 10*time.Second, "duration")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "h3load: -url is required")
		os.Exit(2)
	}
	ok, failed, elapsed := run(*url, *conns, *streams, *dur)
	fmt.Printf("requests %d failed %d seconds %.2f req/s %.0f\n", ok, failed, elapsed.Seconds(), float64(ok)/elapsed.Seconds())
	if ok == 0 {
		os.Exit(1)
	}
}

// run loads url and returns the successful and failed requests.
func run(url string, conns, streams int, dur time.Duration) (int64, int64, time.Duration) {
	var ok, failed atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		// The benchmark's certificate is self-signed, made at start.
		tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
		defer tr.Close()
		for range streams {
			wg.Go(func() {
				buf := make([]byte, 32<<10)
				for ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
					res, err := tr.RoundTrip(req)
					if err != nil {
						if ctx.Err() == nil {
							failed.Add(1)
						}
						continue
					}
					_, err = io.CopyBuffer(io.Discard, res.Body, buf)
					res.Body.Close()
					switch {
					case err == nil && res.StatusCode == 200:
						ok.Add(1)
					case ctx.Err() == nil:
						failed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	return ok.Load(), failed.Load(), time.Since(start)
}
