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
	"github.com/edgeway/edgeway/internal/stdhttp"
	"github.com/edgeway/edgeway/listeners/h2guard"
)

// HTTP/2 limits; the header list limit is MaxHeaderBytes. The first three
// are the defaults of conf.H2Limits' zero values.
const (
	h2MaxConcurrentStreams = 250
	h2MaxFrameSize         = 16384
	h2StreamStallTimeout   = 30 * time.Second
	h2SendPingTimeout      = 30 * time.Second // ping a connection silent this long
	h2PingTimeout          = 15 * time.Second
	h2WriteByteTimeout     = 30 * time.Second // close a peer that stops reading
)

// h2Front serves HTTP/2 connections (h2c with prior knowledge, or h2
// over TLS after ALPN) with golang.org/x/net/http2, each behind an
// h2guard.Conn that enforces what x/net does not (header block timeout,
// CONTINUATION and control frame floods, malformed header fields).
type h2Front struct {
	srv   *http2.Server
	base  *http.Server // settings and graceful shutdown of the connections
	guard h2guard.Config
}

func newH2Front(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger) (*h2Front, error) {
	lim := h2Limits(cfg.H2)
	f := &h2Front{
		base: &http.Server{
			Handler:           stdhttp.HandlerWith(h, stdhttp.Options{StallTimeout: lim.StreamStallTimeout}),
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    cfg.MaxHeaderBytes,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		srv: &http2.Server{
			MaxConcurrentStreams: uint32(lim.MaxConcurrentStreams),
			MaxReadFrameSize:     uint32(lim.MaxFrameSize),
			IdleTimeout:          cfg.IdleTimeout,
			ReadIdleTimeout:      h2SendPingTimeout,
			PingTimeout:          h2PingTimeout,
			WriteByteTimeout:     h2WriteByteTimeout,
		},
		guard: h2guard.Config{
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			MaxFrameSize:      uint32(lim.MaxFrameSize),
			// x/net accepts a header list up to MaxHeaderBytes plus its
			// own slack; the guard's bound is looser than that.
			MaxHeaderBytes: cfg.MaxHeaderBytes + 4096,
		},
	}
	if err := http2.ConfigureServer(f.base, f.srv); err != nil {
		return nil, err
	}
	return f, nil
}

// h2Limits fills in the defaults of the zero values of l.
func h2Limits(l conf.H2Limits) conf.H2Limits {
	if l.MaxConcurrentStreams <= 0 {
		l.MaxConcurrentStreams = h2MaxConcurrentStreams
	}
	if l.MaxFrameSize <= 0 {
		l.MaxFrameSize = h2MaxFrameSize
	}
	if l.StreamStallTimeout <= 0 {
		l.StreamStallTimeout = h2StreamStallTimeout
	}
	return l
}

// serve serves one HTTP/2 connection until it ends. c is a cleartext
// connection that starts with the preface, or a *tls.Conn whose handshake
// chose h2; either way the client's frames pass the guard.
func (f *h2Front) serve(c net.Conn) {
	g := h2guard.New(c, f.guard)
	f.srv.ServeConn(g, &http2.ServeConnOpts{BaseConfig: f.base, Handler: f.base.Handler})
}

// shutdown sends GOAWAY on every connection (the h2 server's graceful
// shutdown hooks; base has no listener of its own).
func (f *h2Front) shutdown(ctx context.Context) { _ = f.base.Shutdown(ctx) }
