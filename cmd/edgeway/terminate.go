package main

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// terminateTimeout bounds a `tls terminate` handshake with the client.
const terminateTimeout = 10 * time.Second

// terminateConfig is the listener's server config for tcp routes with
// `tls terminate`: the same certificates, no ALPN (the stream is not
// HTTP). Built once per listener, at load.
func terminateConfig(tc *tls.Config) *tls.Config {
	c := tc.Clone()
	c.NextProtos = nil
	return c
}

// terminate returns the connection the listener tunnels the client's raw
// TLS bytes to: one end of a pipe whose other end does the handshake with
// tc and copies the plaintext to and from up, the server's connection.
// The goroutine ends when either side closes; a failed handshake is
// logged with the route and closes both.
func terminate(log *slog.Logger, tc *tls.Config, up net.Conn, route string) net.Conn {
	front, back := net.Pipe()
	go func() {
		defer panics.Recover("tls terminate")
		defer up.Close()
		defer back.Close()
		s := tls.Server(back, tc)
		ctx, cancel := context.WithTimeout(context.Background(), terminateTimeout)
		err := s.HandshakeContext(ctx)
		cancel()
		if err != nil {
			log.Warn("tcp route: tls terminate handshake failed", "route", route, "error", err.Error())
			return
		}
		done := make(chan struct{})
		go func() {
			defer panics.Recover("tls terminate copy")
			io.Copy(up, s)
			if cw, ok := up.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			close(done)
		}()
		io.Copy(s, up)
		s.CloseWrite()
		<-done
	}()
	return front
}
