package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// serverConfig loads the certificate and allows TLS 1.2 and 1.3 with Go's
// default key exchanges; the client decides which one is used.
func serverConfig(certFile, keyFile string) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("-cert and -key are required")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading certificate: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
	}, nil
}

// server is a mode that serves TLS on ln until it is closed.
type server func(ln net.Listener, cfg *tls.Config) error

// runServer listens on o.listen, reports LISTENING <addr>, and serves with
// serve until SIGTERM or SIGINT.
func runServer(o options, serve server) error {
	cfg, err := serverConfig(o.certFile, o.keyFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	fmt.Printf("LISTENING %s\n", ln.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		ln.Close()
	}()
	if err := serve(ln, cfg); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveSink answers every TLS connection with sink.
func serveSink(ln net.Listener, cfg *tls.Config) error {
	cfg = cfg.Clone()
	cfg.NextProtos = nil
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("accepting: %w", err)
		}
		go func() {
			if err := sink(tls.Server(c, cfg)); err != nil {
				log.Printf("sink %s: %v", c.RemoteAddr(), err)
			}
		}()
	}
}

// sink reads and discards everything until close_notify (or EOF), then
// writes the byte count as a decimal line and closes.
func sink(c *tls.Conn) error {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Minute))
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, err := c.Read(buf)
		n += int64(k)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("after %d bytes: %w", n, err)
		}
	}
	if _, err := fmt.Fprintf(c, "%d\n", n); err != nil {
		return fmt.Errorf("writing the count: %w", err)
	}
	return nil
}

// serveHTTP is the plain Go reference server: net/http over crypto/tls
// (h2 and HTTP/1.1), answering every request with "ok\n", idle timeout
// 300 s like the servers it is compared with.
func serveHTTP(ln net.Listener, cfg *tls.Config) error {
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "ok\n")
		}),
		TLSConfig:         cfg,
		IdleTimeout:       300 * time.Second,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0), // clients that reset are expected
	}
	return srv.Serve(tls.NewListener(ln, cfg))
}
