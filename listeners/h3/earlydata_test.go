package h3

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// ticketCache is a client session cache that tells when it got a ticket.
type ticketCache struct {
	tls.ClientSessionCache
	got  chan struct{}
	once sync.Once
}

func newTicketCache() *ticketCache {
	return &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(4), got: make(chan struct{})}
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.once.Do(func() { close(c.got) })
	}
}

// resume makes a first connection to e's server, which leaves a session
// ticket in the cache it returns.
func resume(t *testing.T, e *testEnv) *ticketCache {
	t.Helper()
	cache := newTicketCache()
	tc := e.clientTLS()
	tc.ClientSessionCache = cache
	tr := &http3.Transport{TLSClientConfig: tc}
	defer tr.Close()
	do(t, tr, mustRequest("GET", e.url("/first")))
	select {
	case <-cache.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no session ticket")
	}
	return cache
}

// dialEarly dials to (a relay or the server) resuming with cache, and
// returns the connection at once, before its handshake completes.
func dialEarly(t *testing.T, e *testEnv, cache *ticketCache, to *net.UDPAddr) *quic.Conn {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: pc}
	tc := e.clientTLS()
	tc.ClientSessionCache = cache
	tc.NextProtos = []string{http3.NextProtoH3}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := qt.DialEarly(ctx, to, tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CloseWithError(0, "")
		qt.Close()
		pc.Close()
	})
	return c
}

// TestEarlyData: with Allow0RTT, a resuming client's requests in 0-RTT
// data are served for GET (marked Early-Data: 1) and refused with 425
// for POST. A relay keeps both in 0-RTT data (it stalls the server's
// answers until the server has read both requests) and the server's
// handshake incomplete while it serves them (it holds back the client's
// Handshake packets, its Finished, for the rest of the test).
func TestEarlyData(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s early=%q", r.Method, r.Header.Get("Early-Data"))
	}), func(o *Options) { o.Allow0RTT = true })
	cache := resume(t, e)
	before := e.s.Stats()
	r := newRelay(t, e.s.Addr(), func(types []int) bool { return slices.Contains(types, typeHandshake) })
	r.stallServer()
	c := dialEarly(t, e, cache, r.Addr())
	cc := (&http3.Transport{}).NewClientConn(c)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := cc.OpenRequestStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.SendRequestHeader(mustRequest("POST", e.url("/unsafe"))); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	type answer struct {
		res  *http.Response
		body string
	}
	got := make(chan answer, 1)
	go func() {
		res, body := do(t, cc, mustRequest(http3.MethodGet0RTT, e.url("/early")))
		got <- answer{res, body}
	}()
	testutil.Eventually(t, 10*time.Second, func() bool { return e.s.Stats().Requests == before.Requests+2 },
		"the server did not get both requests (stats %+v)", e.s.Stats())
	r.release()

	res, err := rs.ReadResponse()
	if err != nil {
		t.Fatalf("POST in 0-RTT: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTooEarly || len(body) != 0 {
		t.Errorf("POST in 0-RTT: %d %q, want 425 and the handler not run", res.StatusCode, body)
	}
	if a := <-got; a.res.StatusCode != 200 || a.body != `GET early="1"` {
		t.Errorf("GET in 0-RTT: %d %q, want 200 and Early-Data: 1", a.res.StatusCode, a.body)
	}
	if !c.ConnectionState().Used0RTT {
		t.Error("the client did not use 0-RTT")
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return r.heldCount() > 0 },
		"the client sent no Handshake packet for the relay to hold back")
	if st := e.s.Stats(); st.EarlyRejected != 1 || st.HandshakesOK != before.HandshakesOK {
		t.Errorf("stats %+v, want 1 early request rejected and the second handshake not done", st)
	}
}

// TestEarlyDataOffByDefault: without Allow0RTT a resuming client's 0-RTT
// is rejected; its handshake completes without it.
func TestEarlyDataOffByDefault(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.NotFoundHandler(), nil)
	cache := resume(t, e)
	c := dialEarly(t, e, cache, e.s.Addr().(*net.UDPAddr))
	select {
	case <-c.HandshakeComplete():
	case <-time.After(10 * time.Second):
		t.Fatal("no handshake")
	}
	if cs := c.ConnectionState(); cs.Used0RTT || !cs.TLS.DidResume {
		t.Errorf("Used0RTT %v, resumed %v: want a resumed session without 0-RTT", cs.Used0RTT, cs.TLS.DidResume)
	}
}
