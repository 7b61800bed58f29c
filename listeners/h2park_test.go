package listeners

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/testutil"
)

// dialH2TLS opens an HTTP/2 connection over TLS (ALPN h2) to e's
// listener and sends the preface and an empty SETTINGS.
func dialH2TLS(t *testing.T, e *tlsEnv) *h2Client {
	t.Helper()
	c, err := tls.Dial("tcp", e.s.Addr().String(), &tls.Config{RootCAs: e.ca.Pool, ServerName: "site.test", NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hc := &h2Client{t: t, c: c}
	hc.fr = http2.NewFramer(c, bufio.NewReader(c))
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(65536, nil)
	hc.enc = hpack.NewEncoder(&hc.hbuf)
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	hc.write(func() error { return hc.fr.WriteSettings() })
	return hc
}

// waitParked waits until the listener holds n parked connections and
// none served or detached.
func waitParked(t *testing.T, s *Server, n int) {
	t.Helper()
	testutil.Eventually(t, ioTimeout, func() bool {
		st := s.Stats()
		return st.Parked == n && st.Active == 0 && st.Detached == 0
	}, "want %d parked connections: %+v", n, s.Stats())
}

// TestH2TLSParksIdle: an HTTP/2 connection over TLS with no open stream
// is parked on the engine (no goroutine of its own), and is served again
// when the client sends more: requests whose header blocks refer to the
// HPACK dynamic table the earlier ones filled, and a PING.
func TestH2TLSParksIdle(t *testing.T) {
	e := startTLS(t, testConfig())
	hc := dialH2TLS(t, e)
	waitParked(t, e.s, 1)
	for i, id := range []uint32{1, 3, 5} {
		hc.request(id, true, ":scheme", "https", ":authority", "site.test", ":path", "/p", "x-custom", "same value each time")
		ev := hc.readUntil(ioTimeout, answered(id))
		r := ev.streams[id]
		if r == nil || r.status != "200" || !strings.Contains(string(r.body), "proto=2 tls=true") || !strings.Contains(string(r.body), "host=site.test") {
			t.Fatalf("request %d: %+v (goaway %v, closed %v)", i, r, ev.goaway, ev.closed)
		}
		waitParked(t, e.s, 1)
	}
	hc.write(func() error { return hc.fr.WritePing(false, [8]byte{1, 2, 3}) })
	hc.c.SetReadDeadline(time.Now().Add(ioTimeout))
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for the PING's answer: %v", err)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == [8]byte{1, 2, 3} {
			break
		}
	}
	waitParked(t, e.s, 1)
}

// TestH2TLSParkedIdleTimeout: a parked connection idle for idle_timeout
// gets a GOAWAY, then is closed.
func TestH2TLSParkedIdleTimeout(t *testing.T) {
	cfg := testConfig()
	// Long enough that the parked state (from 100 ms after the answer to
	// the GOAWAY) can be seen on a loaded machine.
	cfg.IdleTimeout = 2 * time.Second
	e := startTLS(t, cfg)
	hc := dialH2TLS(t, e)
	hc.request(1, true, ":scheme", "https", ":authority", "site.test")
	if ev := hc.readUntil(ioTimeout, answered(1)); ev.streams[1] == nil || ev.streams[1].status != "200" {
		t.Fatalf("request: %+v", ev.streams[1])
	}
	waitParked(t, e.s, 1)
	ev := hc.readUntil(ioTimeout, closedConn)
	if ev.goaway == nil || ev.goaway.ErrCode != http2.ErrCodeNo || ev.goaway.LastStreamID != 1 {
		t.Fatalf("closed for idleness without GOAWAY NO_ERROR (last stream 1): %+v", ev.goaway)
	}
	testutil.Eventually(t, ioTimeout, func() bool { return e.s.Stats().Open == 0 }, "still open: %+v", e.s.Stats())
}

// TestH2TLSParkedShutdown: a graceful shutdown sends GOAWAY to parked
// connections too and closes them, and returns once they are closed.
func TestH2TLSParkedShutdown(t *testing.T) {
	cfg := testConfig()
	e := startTLS(t, cfg)
	hcs := []*h2Client{dialH2TLS(t, e), dialH2TLS(t, e)}
	hcs[0].request(1, true, ":scheme", "https", ":authority", "site.test")
	hcs[0].readUntil(ioTimeout, answered(1))
	waitParked(t, e.s, 2)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		done <- e.s.Shutdown(ctx)
	}()
	for i, hc := range hcs {
		ev := hc.readUntil(ioTimeout, closedConn)
		if ev.goaway == nil || ev.goaway.ErrCode != http2.ErrCodeNo {
			t.Errorf("connection %d closed by the shutdown without GOAWAY NO_ERROR: %+v", i, ev.goaway)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Shutdown did not return")
	}
}

// TestH2TLSParkedManyStreams: streams open together keep the connection
// served; it parks once the last one ends.
func TestH2TLSParkedManyStreams(t *testing.T) {
	e := startTLS(t, testConfig())
	forEach := func(f func(id uint32)) {
		for id := uint32(1); id < 40; id += 2 {
			f(id)
		}
	}
	hc := dialH2TLS(t, e)
	forEach(func(id uint32) { hc.request(id, true, ":scheme", "https", ":authority", "site.test") })
	ev := hc.readUntil(ioTimeout, func(ev *h2Events) bool {
		n := 0
		for _, r := range ev.streams {
			if r.ended || r.isReset {
				n++
			}
		}
		return ev.closed || ev.goaway != nil || n == 20
	})
	forEach(func(id uint32) {
		if r := ev.streams[id]; r == nil || r.status != "200" || !r.ended {
			t.Errorf("stream %d: %+v", id, r)
		}
	})
	waitParked(t, e.s, 1)
}

// TestH2CParksIdle: an h2c connection (prior knowledge, handed over by
// the HTTP/1 server) is parked while idle too, and served again.
func TestH2CParksIdle(t *testing.T) {
	s := start(t, testConfig(), okHandler())
	hc := dialH2(t, s.Addr().String())
	waitParked(t, s, 1)
	for _, id := range []uint32{1, 3} {
		hc.request(id, true, ":path", "/h2c", "x-custom", "same value each time")
		ev := hc.readUntil(ioTimeout, answered(id))
		if r := ev.streams[id]; r == nil || r.status != "200" || string(r.body) != "HTTP/2.0 /h2c" {
			t.Fatalf("stream %d: %+v (goaway %v, closed %v)", id, r, ev.goaway, ev.closed)
		}
		waitParked(t, s, 1)
	}
}
