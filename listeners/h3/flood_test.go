package h3

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
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

// floodRate is the flood's Initials a second, at most; floodBacklog the
// unread bytes on the server's socket above which it pauses (a fraction
// of the smallest receive buffer Linux gives a socket, 208 KiB).
const (
	floodRate    = 10000
	floodBacklog = 64 << 10
)

// udpBacklog reads the bytes queued unread on the IPv4 UDP socket bound
// to port from /proc/net/udp (ok false where there is no such file).
func udpBacklog(port int) (int, bool) {
	b, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		return 0, false
	}
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx_queue:rx_queue ...
		if len(f) < 5 || !strings.HasSuffix(f[1], want) {
			continue
		}
		_, rx, _ := strings.Cut(f[4], ":")
		n, err := strconv.ParseInt(rx, 16, 64)
		return int(n), err == nil
	}
	return 0, false
}

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
	var sent atomic.Int64
	var throttled atomic.Bool // the server's socket held a full backlog
	wg.Go(func() {
		// floodRate Initials a second (about 100 Mbit/s of 1200-byte
		// datagrams), in bursts every 5ms: a flood that outruns what
		// handshakes cost, bounded so that the test measures the server
		// and not a saturated loopback queue.
		//
		// A burst waits while the server's socket holds more than
		// floodBacklog unread bytes: on a machine slower than the flood
		// (the race detector, other work), a full socket buffer would
		// drop the real client's packets in the kernel, before any of
		// the server's code could tell them from the flood. The flood
		// then runs as fast as the server reads, keeping it saturated.
		to := s.Addr().(*net.UDPAddr)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if q, ok := udpBacklog(to.Port); ok && q > floodBacklog {
				throttled.Store(true)
				continue
			}
			for range floodRate / 200 {
				// Another source each time, as a spoofer would send.
				socks[i%len(socks)].WriteToUDP(pkts[i%len(pkts)], to)
				i++
				sent.Add(1)
			}
		}
	})
	// The flood is on before the real client starts.
	// The real client starts once the flood has run for a second, and
	// makes each request on a new connection: a handshake each.
	// On a busy machine the server may read a second's worth of the flood
	// only slowly: once its socket is full the flood is on all the same.
	testutil.Eventually(t, 30*time.Second, func() bool { return sent.Load() >= floodRate || throttled.Load() }, "the flood did not start")
	start := time.Now()
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("https://%s/%d", s.Addr(), i), nil)
		tr.CloseIdleConnections()
		res, err := tr.RoundTrip(req)
		if err != nil {
			cancel()
			close(stop)
			wg.Wait()
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
	close(stop)
	wg.Wait()
	st := s.Stats()
	t.Logf("20 connections and requests in %v during a flood of %d Initials from %d sources; stats %+v", elapsed, sent.Load(), len(socks), st)
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
