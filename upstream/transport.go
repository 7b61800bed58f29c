package upstream

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// newTransport builds the keep-alive connection pool of one upstream. It
// speaks HTTP/1.1 only (no ALPN upgrade, no h2 attempt), ignores proxy
// environment variables and never asks for compression, so bodies pass
// through byte for byte.
func newTransport(cfg conf.Upstream) *http.Transport {
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dialNoDelay(dialer),
		MaxIdleConns:           cfg.MaxIdleConns * max(len(cfg.Servers), 1),
		MaxIdleConnsPerHost:    cfg.MaxIdleConns,
		IdleConnTimeout:        cfg.IdleTimeout,
		ResponseHeaderTimeout:  cfg.ResponseTimeout,
		ForceAttemptHTTP2:      false,
		TLSNextProto:           map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
		WriteBufferSize:        32 << 10,
		ReadBufferSize:         32 << 10,
	}
}

// dialNoDelay dials with d and turns on TCP_NODELAY (Go's default for TCP,
// made explicit because small proxied writes must not wait for Nagle).
func dialNoDelay(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		return c, nil
	}
}
