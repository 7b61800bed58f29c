package main

import (
	"context"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// HTTP/3 hooks (the QUIC listener's wiring).

// h3Wrap wraps the handler of TCP listener lc (Alt-Svc on responses when
// the listener also serves HTTP/3).
func (d *daemon) h3Wrap(lc conf.Listener, h httpmsg.Handler) httpmsg.Handler { return h }

// startH3 starts the QUIC listener of lc when its protocols include h3.
func (d *daemon) startH3(lc conf.Listener, h httpmsg.Handler) error { return nil }

// shutdownH3 closes the QUIC listeners gracefully.
func (d *daemon) shutdownH3(ctx context.Context) {}
