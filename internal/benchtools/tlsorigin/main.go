// Command tlsorigin is the HTTPS origin of scripts/bench.sh's upstream-TLS
// rows: it answers like the bench harness's upstream (GET / a fixed
// 100-byte body, X-Upstream naming the server), over TLS with the
// certificate it is given, HTTP/1.1 only, keep-alive on, so that a proxy
// in front of it pays for TLS to its upstream and nothing else changes.
// It prints the connections and handshakes it took on SIGTERM: with
// upstream keep-alive and session resumption both stay far below the
// request count.
//
//	tlsorigin -addr 127.0.0.1:9011 -id tls1 -cert origin.pem -key origin.key
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9011", "listen address")
	id := flag.String("id", "", "value of the X-Upstream response header (default: the address)")
	certFile := flag.String("cert", "", "certificate chain, PEM")
	keyFile := flag.String("key", "", "private key, PEM")
	flag.Parse()
	if *id == "" {
		*id = *addr
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		log.Fatalf("tlsorigin: %v", err)
	}
	body := make([]byte, 100)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	body[99] = '\n'
	var conns, resumed atomic.Int64
	cfg := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"},
		MinVersion:   tls.VersionTLS12,
		VerifyConnection: func(cs tls.ConnectionState) error {
			conns.Add(1)
			if cs.DidResume {
				resumed.Add(1)
			}
			return nil
		},
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("tlsorigin: %v", err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Upstream", *id)
			w.Header().Set("Content-Type", "text/plain")
			w.Write(body)
		}),
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
	}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		fmt.Fprintf(os.Stderr, "tlsorigin %s: %d handshakes, %d resumed\n", *id, conns.Load(), resumed.Load())
		srv.Close()
	}()
	if err := srv.Serve(tls.NewListener(ln, cfg)); err != nil && err != http.ErrServerClosed {
		log.Fatalf("tlsorigin: %v", err)
	}
}
