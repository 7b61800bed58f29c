package httpclient

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"sync"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/internal/panics"
)

// h2Client keeps the HTTP/2 connections of an h2c pool: per server (and,
// with send_proxy, per client), the open connections and at most one dial
// in flight. A request takes a stream on the first connection that has
// one free (ReserveNewRequest); when none has, one more connection is
// dialed, so a server gets as many connections as its concurrent-stream
// limit needs and usually one. Connections close themselves after the
// idle timeout (http2.Transport.IdleConnTimeout); the transport's reaper
// drops closed ones.
type h2Client struct {
	t  *Transport
	tr *http2.Transport // connection settings; its own pool is not used

	mu     sync.Mutex
	hosts  map[h2Key]*h2Host
	closed bool
}

// h2Key names the connections a request may use: the server's, and with
// send_proxy those opened for the same client.
type h2Key struct {
	addr   string
	client netip.AddrPort
}

type h2Host struct {
	mu      sync.Mutex
	conns   []*http2.ClientConn
	dialing *h2Dial // the dial in flight, if any
}

// h2Dial is a dial in flight; requests that find no free stream wait for
// it rather than dialing too.
type h2Dial struct {
	done chan struct{}
	err  error // set before done closes
}

func newH2Client(t *Transport) *h2Client {
	return &h2Client{
		t: t,
		tr: &http2.Transport{
			AllowHTTP: true,
			// Bodies pass through byte for byte: never ask for gzip.
			DisableCompression: true,
			IdleConnTimeout:    t.idleTimeout,
			MaxHeaderListSize:  maxHeaderBytes,
		},
		hosts: make(map[h2Key]*h2Host),
	}
}

func (h *h2Client) host(key h2Key) *h2Host {
	h.mu.Lock()
	defer h.mu.Unlock()
	hh := h.hosts[key]
	if hh == nil {
		hh = new(h2Host)
		h.hosts[key] = hh
	}
	return hh
}

// conn returns a connection with a stream reserved for one request: the
// caller must call RoundTrip on it, which uses the reservation.
func (h *h2Client) conn(ctx context.Context, key h2Key, req *Request) (*http2.ClientConn, error) {
	hh := h.host(key)
	for {
		hh.mu.Lock()
		if cc := hh.reserve(); cc != nil {
			hh.mu.Unlock()
			return cc, nil
		}
		if d := hh.dialing; d != nil {
			hh.mu.Unlock()
			select {
			case <-d.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			// Another request's dial: its failure is ours unless only its
			// own context ended it.
			if d.err != nil && !isContextErr(d.err) {
				return nil, d.err
			}
			continue
		}
		d := &h2Dial{done: make(chan struct{})}
		hh.dialing = d
		hh.mu.Unlock()
		cc, err := h.dial(ctx, key.addr, req)
		hh.mu.Lock()
		hh.dialing = nil
		if err == nil {
			hh.conns = append(hh.conns, cc)
		}
		hh.mu.Unlock()
		d.err = err
		close(d.done)
		if err != nil {
			return nil, err
		}
	}
}

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// reserve drops the connections that closed or are closing (GOAWAY) and
// reserves a stream on the first that has one free. Under hh.mu.
func (hh *h2Host) reserve() *http2.ClientConn {
	live := hh.conns[:0]
	var got *http2.ClientConn
	for _, cc := range hh.conns {
		if st := cc.State(); st.Closed || st.Closing {
			continue
		}
		live = append(live, cc)
		if got == nil && cc.ReserveNewRequest() {
			got = cc
		}
	}
	clear(hh.conns[len(live):])
	hh.conns = live
	return got
}

// dial opens a connection (with its PROXY header) and starts HTTP/2 on it:
// the client preface and SETTINGS go out at once. x/net writes through a
// coalescedConn, whose one writer sends the frames of all streams in as
// few writes as the connection's pace allows.
func (h *h2Client) dial(ctx context.Context, addr string, req *Request) (*http2.ClientConn, error) {
	nc, err := h.t.dialConn(ctx, addr, req, false)
	if err != nil {
		return nil, err
	}
	nc = coalesce(nc)
	cc, err := h.tr.NewClientConn(nc)
	if err != nil {
		nc.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &Error{Kind: KindConnect, Addr: addr, Err: err}
	}
	return cc, nil
}

// prune forgets closed connections and the hosts left without any (with
// send_proxy a host per client would otherwise pile up).
func (h *h2Client) prune() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, hh := range h.hosts {
		hh.mu.Lock()
		live := hh.conns[:0]
		for _, cc := range hh.conns {
			if !cc.State().Closed {
				live = append(live, cc)
			}
		}
		clear(hh.conns[len(live):])
		hh.conns = live
		empty := len(live) == 0 && hh.dialing == nil
		hh.mu.Unlock()
		if empty {
			delete(h.hosts, key)
		}
	}
}

// idleConns counts the open connections with no stream in flight.
func (h *h2Client) idleConns() int {
	n := 0
	h.each(func(cc *http2.ClientConn) {
		if st := cc.State(); !st.Closed && !st.Closing && st.StreamsActive == 0 && st.StreamsReserved == 0 {
			n++
		}
	})
	return n
}

// close shuts every connection down gracefully: each closes once its
// streams ended (Transport.Close: "a connection in use is closed when its
// response ends"). Later requests dial new connections, which are shut
// down the same way after their exchange.
func (h *h2Client) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.each(func(cc *http2.ClientConn) {
		panics.Go("upstream h2 shutdown", func() { cc.Shutdown(context.Background()) })
	})
}

func (h *h2Client) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

func (h *h2Client) each(fn func(*http2.ClientConn)) {
	h.mu.Lock()
	hosts := make([]*h2Host, 0, len(h.hosts))
	for _, hh := range h.hosts {
		hosts = append(hosts, hh)
	}
	h.mu.Unlock()
	for _, hh := range hosts {
		hh.mu.Lock()
		conns := slices.Clone(hh.conns)
		hh.mu.Unlock()
		for _, cc := range conns {
			fn(cc)
		}
	}
}
