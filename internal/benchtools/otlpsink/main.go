// Command otlpsink is the OTLP/HTTP collector of scripts/bench.sh's tracing
// runs: it accepts POST /v1/traces, reads and discards the body and answers
// an empty ExportTraceServiceResponse, so that the proxy's export costs what
// it costs against a collector that keeps up. It prints the requests and
// bytes it took on SIGTERM.
//
//	otlpsink -listen 127.0.0.1:4318
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:4318", "address to listen on")
	flag.Parse()
	var posts, bytes atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		posts.Add(1)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty message is a valid response
	})
	srv := &http.Server{Addr: *listen, Handler: mux}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		fmt.Fprintf(os.Stderr, "otlpsink: %d exports, %d bytes\n", posts.Load(), bytes.Load())
		srv.Close()
	}()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
