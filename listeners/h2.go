package listeners

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpmsg/stdhttp"
)

// HTTP/2 limits; the header list limit is MaxHeaderBytes.
const (
	h2MaxConcurrentStreams = 250
	h2SendPingTimeout      = 30 * time.Second // ping a connection silent this long
	h2PingTimeout          = 15 * time.Second
	h2WriteByteTimeout     = 30 * time.Second // close a peer that stops reading
)

// h2Front serves HTTP/2 connections (h2c with prior knowledge, or h2
// over TLS after ALPN) with golang.org/x/net/http2.
type h2Front struct {
	srv  *http2.Server
	base *http.Server // settings and graceful shutdown of the connections
}

func newH2Front(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger) (*h2Front, error) {
	f := &h2Front{
		base: &http.Server{
			Handler:           stdhttp.Handler(h),
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    cfg.MaxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		srv: &http2.Server{
			MaxConcurrentStreams: h2MaxConcurrentStreams,
			IdleTimeout:          cfg.IdleTimeout,
			ReadIdleTimeout:      h2SendPingTimeout,
			PingTimeout:          h2PingTimeout,
			WriteByteTimeout:     h2WriteByteTimeout,
		},
	}
	if err := http2.ConfigureServer(f.base, f.srv); err != nil {
		return nil, err
	}
	return f, nil
}

// serve serves one HTTP/2 connection until it ends. c is a cleartext
// connection that starts with the preface, or a *tls.Conn whose handshake
// chose h2.
func (f *h2Front) serve(c net.Conn) {
	f.srv.ServeConn(c, &http2.ServeConnOpts{BaseConfig: f.base, Handler: f.base.Handler})
}

// shutdown sends GOAWAY on every connection (the h2 server's graceful
// shutdown hooks; base has no listener of its own).
func (f *h2Front) shutdown(ctx context.Context) { _ = f.base.Shutdown(ctx) }
