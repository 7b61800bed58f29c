package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/listeners"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
	edgetls "github.com/edgeway/edgeway/tls"
)

// isTLS reports whether a listener terminates or passes through TLS.
func isTLS(lc conf.Listener) bool { return slices.Contains(lc.Protocols, "tls") }

// loadCertificates loads the tls block's certificates into the store (at
// start and on every reload): a file that fails keeps every certificate
// served as it was, and the error refuses the reload.
func (d *daemon) loadCertificates(cfg *conf.Config) error {
	if cfg.TLS == nil && d.store == nil {
		return nil
	}
	if d.store == nil {
		d.store = edgetls.NewStore(d.log)
	}
	if err := d.store.Load(cfg.TLS); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	return nil
}

// listen binds one listener with what it serves: the router, or the
// HTTPS redirect shortcut; on a TLS listener the store's certificates and
// the tcp routes' passthrough.
func (d *daemon) listen(lc conf.Listener) (*listeners.Server, error) {
	var h httpmsg.Handler = d.router.Proxy(lc.Name)
	if lc.RedirectHTTPS > 0 {
		h = router.RedirectHTTPS(lc.RedirectHTTPS)
	}
	var o listeners.Options
	if isTLS(lc) {
		if d.store == nil {
			return nil, errors.New("a TLS listener needs a tls block with certificates")
		}
		tc, err := d.store.ServerConfig(lc.TLS, nil)
		if err != nil {
			return nil, err
		}
		o.TLS = tc
		o.Passthrough = d.passthrough(lc.Name)
	}
	return listeners.ListenWith(lc, h, d.log, o)
}

// passthrough returns the listener's hook for tcp routes: a ClientHello a
// tcp route claims is sent on, raw, to a server of the route's pool.
func (d *daemon) passthrough(listener string) func(context.Context, *rule.TCPHello, netip.AddrPort, netip.AddrPort) (net.Conn, error) {
	return func(ctx context.Context, h *rule.TCPHello, client, local netip.AddrPort) (net.Conn, error) {
		if !d.router.Snapshot().HasTCPRoutes(listener) {
			return nil, listeners.ErrNoRoute
		}
		c, err := d.router.DialTCP(ctx, listener, h, client, local)
		if errors.Is(err, router.ErrNoTCPRoute) {
			return nil, listeners.ErrNoRoute
		}
		if err != nil {
			return nil, err
		}
		d.log.Debug("passthrough", "listener", listener, "sni", h.SNI, "route", c.Route, "server", c.Server, "client", client.String())
		return c.Conn, nil
	}
}
