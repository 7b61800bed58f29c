//go:build !unix

package httpclient

import "net"

// prober is a no-op where a non-blocking peek is not available.
type prober struct{}

func newProber(net.Conn) *prober { return nil }

func (p *prober) alive() bool { return true }
