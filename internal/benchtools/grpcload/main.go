// Command grpcload is the gRPC load generator and origin of
// scripts/bench-grpc.sh: ghz-style unary calls from grpc-go, so that a
// proxy is measured with the client real gRPC services use.
//
// The client opens -channels grpc.ClientConns (h2c, or TLS without chain
// verification with -tls) and runs -workers goroutines spread over them
// round robin, each calling the echo service's Unary method with a
// -size byte message, one call after the other, for -d. Each answer must
// be the message sent; any other answer or a failed call is an error.
//
// Modes (one line of output each, for the calling script):
//
//	-mode load -addr A [-workers 8 -channels 1 -size 64 -d 10s -tls -window 0]
//	    RESULT calls= errors= secs= calls_per_sec= p50_ms= p99_ms= [first_error=...]
//	-mode origin -listen A
//	    LISTENING addr (grpc-go serving internal/testgrpc's Echo over h2c)
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// options holds every flag; each mode reads the ones it documents.
type options struct {
	mode     string
	addr     string
	listen   string
	workers  int
	channels int
	size     int
	duration time.Duration
	timeout  time.Duration
	tls      bool
	window   int
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "", "load | origin")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:27000", "load: the server or proxy, host:port")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:0", "origin: the address to serve on")
	flag.IntVar(&o.workers, "workers", 8, "load: concurrent callers, each one call at a time")
	flag.IntVar(&o.channels, "channels", 1, "load: gRPC channels (connections) the workers share")
	flag.IntVar(&o.size, "size", 64, "load: bytes in each request message (echoed back)")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "load: how long to call")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Second, "load: each call's deadline")
	flag.BoolVar(&o.tls, "tls", false, "load: TLS with ALPN h2 (certificate not verified) instead of h2c")
	flag.IntVar(&o.window, "window", 0, "load: a fixed HTTP/2 stream and connection window (bytes, at least 64 KiB), which turns grpc-go's BDP pings off; 0: grpc-go's default, BDP estimation on")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "grpcload: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch o.mode {
	case "load":
		r, err := load(o)
		if err != nil {
			return err
		}
		fmt.Println(r)
		return nil
	case "origin":
		return origin(o.listen, os.Stdout)
	}
	return fmt.Errorf("unknown -mode %q (load or origin)", o.mode)
}
