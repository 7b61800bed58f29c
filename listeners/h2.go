package listeners

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/internal/stdhttp"
	"github.com/edgeway/edgeway/listeners/engine"
	"github.com/edgeway/edgeway/listeners/h2conn"
	"github.com/edgeway/edgeway/listeners/h2guard"
)

// HTTP/2 timeouts that are not listen settings; the header list limit is
// MaxHeaderBytes, the others are the listener's h2 block (conf.H2Limits).
const (
	h2SendPingTimeout  = 30 * time.Second // ping a connection silent this long
	h2PingTimeout      = 15 * time.Second
	h2WriteByteTimeout = 30 * time.Second // close a peer that stops reading
)

// The HTTP/2 header list limits. The listener's max_header_bytes is
// enforced by the adapter (stdhttp.Options.MaxHeaderBytes, plus x/net's
// own slack of 32 bytes for ten fields, as before), which answers 431 on
// the stream and reports it. x/net and the guard get h2HeaderFactor
// times more: x/net's hpack decoder refuses a string over its list limit
// with COMPRESSION_ERROR on the whole connection, and past that limit it
// answers 431 itself, which edgeway never sees. Past h2HeaderFactor ×
// max_header_bytes the guard ends the connection (ENHANCE_YOUR_CALM) and
// reports it. Memory stays bounded: a block over max_header_bytes is
// answered as soon as it is decoded, so only one such block per
// connection is held at a time, at most h2HeaderFactor × max_header_bytes;
// the requests that go on to the router stay within max_header_bytes.
const (
	h2HeaderFactor = 4
	h2HeaderSlack  = 10 * 32 // x/net's adjustHTTP1MaxHeaderSize
)

// h2Front serves HTTP/2 connections (h2c with prior knowledge, or h2
// over TLS after ALPN) with edgeway's own server (listeners/h2conn, the
// default h2_server own), or with h2_server xnet with
// golang.org/x/net/http2, each behind an h2guard.Conn that enforces what
// x/net does not (header block timeout, CONTINUATION and control frame
// floods, malformed header fields).
type h2Front struct {
	own    *h2conn.Server // nil: x/net's
	ownCfg h2conn.Config
	srv    *http2.Server
	base   *http.Server // settings and graceful shutdown of the connections
	guard  h2guard.Config
	// readHeader and idle are the live listen settings it was made with.
	readHeader, idle time.Duration
	name             string
	refused          func(httpmsg.Refusal) // nil: refusals are not reported
}

func newH2Front(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger, refused func(httpmsg.Refusal)) (*h2Front, error) {
	lim := cfg.H2
	f := &h2Front{readHeader: cfg.ReadHeaderTimeout, idle: cfg.IdleTimeout, name: cfg.Name, refused: refused,
		base: &http.Server{
			Handler: stdhttp.HandlerWith(h, stdhttp.Options{StallTimeout: lim.StreamStallTimeout,
				MaxHeaderBytes: cfg.MaxHeaderBytes + h2HeaderSlack, Listener: cfg.Name, Refused: refused}),
			ReadHeaderTimeout: cfg.ReadHeaderTimeout,
			IdleTimeout:       cfg.IdleTimeout,
			// x/net's list and string limit, and its
			// SETTINGS_MAX_HEADER_LIST_SIZE (see h2HeaderFactor).
			MaxHeaderBytes: h2HeaderFactor*cfg.MaxHeaderBytes + h2HeaderSlack,
			ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
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
			// Below x/net's, so that the guard trips first and reports.
			MaxHeaderBytes: h2HeaderFactor * cfg.MaxHeaderBytes,
		},
	}
	if cfg.H2Server == "own" {
		f.ownCfg = h2conn.Config{Handler: h, MaxConcurrentStreams: lim.MaxConcurrentStreams,
			MaxFrameSize: lim.MaxFrameSize, MaxHeaderBytes: cfg.MaxHeaderBytes + h2HeaderSlack,
			ReadHeaderTimeout: cfg.ReadHeaderTimeout, IdleTimeout: cfg.IdleTimeout,
			StallTimeout: lim.StreamStallTimeout, WriteTimeout: h2WriteByteTimeout,
			Listener: cfg.Name, Refused: refused, Log: log}
		f.own = h2conn.New(f.ownCfg)
		return f, nil
	}
	if refused != nil {
		f.guard.Report = f.reportViolation
		f.guard.ReportStream = f.reportStream
	}
	if err := http2.ConfigureServer(f.base, f.srv); err != nil {
		return nil, err
	}
	return f, nil
}

// serve serves one HTTP/2 connection until it ends. c is a cleartext
// connection that starts with the preface, or a *tls.Conn whose handshake
// chose h2; either way the client's frames pass the guard.
func (f *h2Front) serve(c net.Conn) {
	if f.own != nil {
		f.own.ServeConn(c)
		return
	}
	g := h2guard.New(c, f.guard)
	srv := f.srv
	if f.refused != nil {
		// x/net reads CountError when a connection starts, and tells it
		// nothing of the connection: a copy per connection names the
		// client. The copy shares x/net's shutdown state (a pointer set by
		// ConfigureServer), so Shutdown still reaches it.
		cs := *f.srv
		cs.CountError = func(errType string) { f.reportCountError(c.RemoteAddr(), errType) }
		srv = &cs
	}
	srv.ServeConn(g, &http2.ServeConnOpts{BaseConfig: f.base, Handler: f.base.Handler})
}

// serveEngine serves an HTTP/2 connection over TLS on its engine
// dispatch: edgeway's own server parks it on the engine while it has no
// stream (h2conn.Resume serves its later dispatches); x/net's holds it
// on a goroutine of its own (detached), run by detached.
func (f *h2Front) serveEngine(c *engine.Conn, tc *tls.Conn, detached func(*engine.Conn, *tls.Conn)) engine.Action {
	if f.own != nil {
		return f.own.ServeEngine(c, tc, nil)
	}
	panics.Go("h2 connection", func() { detached(c, tc) })
	return engine.Detach
}

// shutdown sends GOAWAY on every connection (the h2 server's graceful
// shutdown hooks; base has no listener of its own).
func (f *h2Front) shutdown(ctx context.Context) {
	if f.own != nil {
		_ = f.own.Shutdown(ctx)
		return
	}
	_ = f.base.Shutdown(ctx)
}

// h2Fronts is a listener's HTTP/2 server: the h2Front new connections
// get, replaced when a reload changes the timeouts it was made with
// (x/net's servers take their settings when made). Earlier fronts keep
// serving their connections and are shut down with the listener.
type h2Fronts struct {
	cur     atomic.Pointer[h2Front]
	h       httpmsg.Handler
	log     *slog.Logger
	refused func(httpmsg.Refusal)
	mu      sync.Mutex
	all     []*h2Front // every front made, for shutdown
}

func newH2Fronts(cfg conf.Listener, h httpmsg.Handler, log *slog.Logger, refused func(httpmsg.Refusal)) (*h2Fronts, error) {
	fs := &h2Fronts{h: h, log: log, refused: refused}
	if err := fs.update(cfg); err != nil {
		return nil, err
	}
	return fs, nil
}

// serve serves c on the current front.
func (fs *h2Fronts) serve(c net.Conn) { fs.cur.Load().serve(c) }

// serveH2C serves an h2c connection on its engine dispatch, pre the
// bytes the HTTP/1 server read of it (edgeway's own server only: it
// parks the connection while idle).
func (fs *h2Fronts) serveH2C(c *engine.Conn, pre []byte) engine.Action {
	return fs.cur.Load().own.ServeEngine(c, c.Conn, pre)
}

// serveEngine serves a TLS connection on the current front.
func (fs *h2Fronts) serveEngine(c *engine.Conn, tc *tls.Conn, detached func(*engine.Conn, *tls.Conn)) engine.Action {
	return fs.cur.Load().serveEngine(c, tc, detached)
}

// update makes a new front for the connections to come when cfg's live
// settings differ from the current front's.
func (fs *h2Fronts) update(cfg conf.Listener) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.cur.Load(); f != nil && f.readHeader == cfg.ReadHeaderTimeout && f.idle == cfg.IdleTimeout {
		return nil
	}
	f, err := newH2Front(cfg, fs.h, fs.log, fs.refused)
	if err != nil {
		return err
	}
	fs.all = append(fs.all, f)
	fs.cur.Store(f)
	return nil
}

// shutdown shuts every front down, the current one and those a reload
// replaced.
func (fs *h2Fronts) shutdown(ctx context.Context) {
	fs.mu.Lock()
	all := slices.Clone(fs.all)
	fs.mu.Unlock()
	for _, f := range all {
		f.shutdown(ctx)
	}
}
