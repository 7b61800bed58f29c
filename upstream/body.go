package upstream

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
)

// wrap gives the caller the response: a 101 becomes a tunnel over the raw
// connection, a response without a body ends the exchange at once, any
// other gets a body that ends it at EOF or Close.
func (c *conn) wrap(req *http.Request, resp *http.Response, hasBody bool, stop func() bool) *http.Response {
	reusable := !resp.Close && !req.Close && req.Header["Upgrade"] == nil
	if resp.StatusCode == http.StatusSwitchingProtocols {
		if stop != nil {
			stop() // the caller owns the tunnel and its cancellation
		}
		resp.Body = &upgradeBody{br: c.br, nc: c.nc}
		c.br, c.bw = nil, nil
		return resp
	}
	if resp.Body == http.NoBody {
		c.release(stop, reusable, hasBody)
		return resp
	}
	resp.Body = &body{c: c, rc: resp.Body, stop: stop, reusable: reusable, hasBody: hasBody}
	return resp
}

// body is a response body. Reading it to EOF may pool the connection;
// Close before EOF closes it.
type body struct {
	c        *conn
	rc       io.ReadCloser
	stop     func() bool
	done     atomic.Bool
	reusable bool
	hasBody  bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	if !b.done.CompareAndSwap(false, true) {
		return n, err // closed meanwhile: Close dropped the connection
	}
	if err == io.EOF {
		b.c.release(b.stop, b.reusable, b.hasBody)
		return n, err
	}
	b.c.drop(b.stop)
	return n, err
}

// Close ends the exchange; before EOF it closes the connection, which also
// ends a Read blocked in another goroutine.
func (b *body) Close() error {
	if b.done.CompareAndSwap(false, true) {
		if b.stop != nil {
			b.stop()
		}
		b.c.nc.Close()
	}
	return nil
}

// upgradeBody is the body of a 101 response: the raw connection, after the
// bytes the head's reader already buffered. httputil.ReverseProxy tunnels
// through it.
type upgradeBody struct {
	br *bufio.Reader
	nc net.Conn
}

func (u *upgradeBody) Read(p []byte) (int, error) {
	if u.br != nil {
		if u.br.Buffered() > 0 {
			return u.br.Read(p)
		}
		u.br = nil
	}
	return u.nc.Read(p)
}

func (u *upgradeBody) Write(p []byte) (int, error) { return u.nc.Write(p) }

func (u *upgradeBody) Close() error { return u.nc.Close() }
