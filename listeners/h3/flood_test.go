package h3

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// capturePC is a PacketConn that keeps what a QUIC client writes and
// never delivers anything: the client's first flight, to replay.
type capturePC struct {
	out    chan []byte
	closed chan struct{}
	once   sync.Once
}

func (c *capturePC) ReadFrom([]byte) (int, net.Addr, error) {
	<-c.closed
	return 0, nil, net.ErrClosed
}

func (c *capturePC) WriteTo(b []byte, _ net.Addr) (int, error) {
	select {
	case c.out <- append([]byte(nil), b...):
	default:
	}
	return len(b), nil
}
func (c *capturePC) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *capturePC) LocalAddr() net.Addr              { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9} }
func (c *capturePC) SetDeadline(time.Time) error      { return nil }
func (c *capturePC) SetReadDeadline(time.Time) error  { return nil }
func (c *capturePC) SetWriteDeadline(time.Time) error { return nil }

// initials makes n client Initial packets (each a new connection ID and
// ClientHello) addressed to to.
func initials(t *testing.T, n int, to net.Addr) [][]byte {
	t.Helper()
	var out [][]byte
	for range n {
		pc := &capturePC{out: make(chan []byte, 4), closed: make(chan struct{})}
		tr := &quic.Transport{Conn: pc}
		ctx, cancel := context.WithCancel(context.Background())
		go tr.Dial(ctx, to, &tls.Config{NextProtos: []string{"h3"}, ServerName: "localhost"}, nil)
		select {
		case p := <-pc.out:
			out = append(out, p)
		case <-time.After(5 * time.Second):
			t.Fatal("no Initial captured")
		}
		cancel()
		pc.Close() // first: Transport.Close waits for its reader to return
		tr.Close()
	}
	return out
}

// floodRate is the flood's Initials a second, at most; floodWindow the
// flood's Initials the server has not yet answered with a Retry, at most.
//
// quic-go queues at most 8 Retries to send and drops the Initial of any
// source, the real client's too, that finds the queue full: a flood that
// outran the server's Retry rate would test only how fast the machine
// signs Retries (the race detector, other work), not whether a real
// client is served beside a flood the server answers statelessly.
const (
	floodRate   = 10000
	floodWindow = 6
)

// TestInitialFloodFromSpoofedSources: a flood of valid Initial packets
// from many loopback addresses (127.0.0.2 up, as spoofed sources would
// look) that never complete a handshake must not stop a real client
// from being served; the server answers the flood with Retry once the
// handshakes in flight pass RetryAbove.
func TestInitialFloodFromSpoofedSources(t *testing.T) {
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served")
	}), func(o *Options) { o.RetryAbove = 16 })
	s := e.s
	// The real client's handshakes compete with the flood for the
	// server's socket buffer and, on a busy machine, for the CPU: a lost
	// Initial is sent again after the client's backoff, so it gets more
	// than quic-go's default 5 s of handshake silence. What the test
	// asserts is that it is served, not how fast.
	tr := &http3.Transport{TLSClientConfig: e.clientTLS(),
		QUICConfig: &quic.Config{HandshakeIdleTimeout: 30 * time.Second}}
	t.Cleanup(func() { tr.Close() })
	pkts := initials(t, 200, s.Addr())
	var socks []*net.UDPConn
	for i := range 50 {
		ip := net.IPv4(127, 0, byte(1+i/250), byte(2+i%250))
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
		if err != nil {
			t.Skipf("cannot bind %s (loopback aliases unavailable): %v", ip, err)
		}
		defer c.Close()
		socks = append(socks, c)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, retries atomic.Int64
	answered := make(chan struct{}, 1)
	for _, c := range socks {
		wg.Go(func() {
			buf := make([]byte, 2048)
			for {
				n, _, err := c.ReadFromUDP(buf)
				if err != nil {
					return
				}
				if t := longTypes(buf[:n]); len(t) > 0 && t[0] == typeRetry {
					retries.Add(1)
					select {
					case answered <- struct{}{}:
					default:
					}
				}
			}
		})
	}
	wg.Go(func() {
		// A closed loop: a new Initial, from another source each time
		// as a spoofer would send, as soon as the server has answered
		// one of the floodWindow in flight, up to floodRate a second.
		// The server is kept busy answering the flood for as long as
		// the real client runs. An Initial that starts a handshake
		// (while fewer than RetryAbove are in flight) or is lost gets
		// no Retry: after 20ms without one, what is in flight is
		// written off.
		to := s.Addr().(*net.UDPAddr)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		wait := time.NewTimer(time.Hour)
		defer wait.Stop()
		var lost int64
		for i, budget := 0, 0; ; {
			if budget == 0 {
				select {
				case <-stop:
					return
				case <-tick.C:
					budget = floodRate / 200
				}
			}
			if sent.Load()-retries.Load()-lost >= floodWindow {
				wait.Reset(20 * time.Millisecond)
				select {
				case <-stop:
					return
				case <-answered:
				case <-wait.C:
					lost = sent.Load() - retries.Load()
				}
				continue
			}
			socks[i%len(socks)].WriteToUDP(pkts[i%len(pkts)], to)
			i++
			budget--
			sent.Add(1)
		}
	})
	var stopOnce sync.Once
	stopFlood := func() {
		stopOnce.Do(func() {
			close(stop)
			for _, c := range socks {
				c.Close()
			}
			wg.Wait()
		})
	}
	t.Cleanup(stopFlood)
	// The flood is on, and answered with Retry, before the real client
	// starts; the real client makes each request on a new connection: a
	// handshake each.
	testutil.Eventually(t, 30*time.Second, func() bool { return retries.Load() >= 1000 }, "the flood was not answered with Retry")
	start := time.Now()
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("https://%s/%d", s.Addr(), i), nil)
		tr.CloseIdleConnections()
		res, err := tr.RoundTrip(req)
		if err != nil {
			cancel()
			stopFlood()
			t.Fatalf("request %d during the flood: %v (stats %+v)", i, err, s.Stats())
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		cancel()
		if string(b) != "served" {
			t.Fatalf("request %d: %q", i, b)
		}
	}
	elapsed := time.Since(start)
	stopFlood()
	st := s.Stats()
	t.Logf("20 connections and requests in %v during a flood of %d Initials (%d answered with Retry) from %d sources; stats %+v", elapsed, sent.Load(), retries.Load(), len(socks), st)
	if st.HandshakesOK < 20 {
		t.Errorf("%d handshakes completed, want the real client's 20", st.HandshakesOK)
	}
	if st.RetriesAsked == 0 {
		t.Error("the server never asked for Retry under the flood")
	}
}

// viaRelay is an HTTP/3 client whose connections go through r.
func viaRelay(e *testEnv, r *relay) *http3.Transport {
	return &http3.Transport{
		TLSClientConfig: e.clientTLS(),
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return quic.DialAddrEarly(ctx, r.Addr().String(), tc, qc)
		},
	}
}

// TestRetryUnderLoad: a client is asked to prove its address with Retry
// only while more than RetryAbove handshakes are in flight, and is
// served either way.
func TestRetryUnderLoad(t *testing.T) {
	t.Parallel()
	e := testServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served")
	}), func(o *Options) { o.RetryAbove = 4 })
	get := func(r *relay) {
		t.Helper()
		tr := viaRelay(e, r)
		defer tr.Close()
		if res, body := do(t, tr, mustRequest("GET", e.url("/"))); res.StatusCode != 200 || body != "served" {
			t.Fatalf("%d %q", res.StatusCode, body)
		}
	}
	idle := newRelay(t, e.s.Addr(), nil)
	get(idle)
	if idle.serverSent(typeRetry) || e.s.Stats().RetriesAsked != 0 {
		t.Fatalf("Retry asked with no load (stats %+v)", e.s.Stats())
	}

	// Load: handshakes that never complete, from a socket that ignores
	// the answers; they stay in flight for the handshake timeout (5s).
	sock, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	for _, p := range initials(t, 8, e.s.Addr()) {
		sock.WriteTo(p, e.s.Addr())
	}
	testutil.Eventually(t, 3*time.Second, func() bool { return e.s.handshaking.Load() >= 4 },
		"the stalled handshakes did not reach the server")
	loaded := newRelay(t, e.s.Addr(), nil)
	get(loaded)
	if !loaded.serverSent(typeRetry) {
		t.Errorf("no Retry under load (stats %+v)", e.s.Stats())
	}
}
