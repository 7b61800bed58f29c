package listeners

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"

	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/listeners/h2guard"
)

// TestH2StalledStreamsReset opens streams with a flow-control window of 0
// against a large response: each is reset within the stall timeout and
// the upstream connections behind them are freed (closed, or idle once the
// answer was buffered).
func TestH2StalledStreamsReset(t *testing.T) {
	var mu sync.Mutex
	states := map[net.Conn]http.ConnState{}
	// busy counts the upstream connections still serving a request.
	busy := func() (n, all int) {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range states {
			if s == http.StateActive || s == http.StateNew {
				n++
			}
		}
		return n, len(states)
	}
	big := strings.Repeat("x", 1<<20)
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(big))
	}), ConnState: func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		states[c] = s
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })

	const stall, streams = 300 * time.Millisecond, 8
	base := testConfig()
	base.H2.StreamStallTimeout = stall
	forEachH2Server(t, base, func(t *testing.T, cfg conf.Listener) {
		env := startH2Env(t, cfg, ln.Addr().String())
		hc := dialH2(t, env.srv.Addr().String(), http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		start := time.Now()
		for i := range streams {
			hc.request(uint32(2*i+1), true)
		}
		ev := hc.readUntil(5*time.Second, func(ev *h2Events) bool {
			n := 0
			for _, r := range ev.streams {
				if r.isReset {
					n++
				}
			}
			return n == streams || ev.closed
		})
		if took := time.Since(start); took > stall+2*time.Second {
			t.Errorf("streams reset after %v, want about %v", took, stall)
		}
		for i := range streams {
			if r := ev.streams[uint32(2*i+1)]; r == nil || !r.isReset {
				t.Errorf("stream %d not reset: %+v", 2*i+1, r)
			}
		}
		// No upstream connection stays held by a stalled stream: each is
		// closed, or idle in the pool once its answer was read whole
		// (response buffering).
		testutil.Eventually(t, 5*time.Second, func() bool { n, all := busy(); return all > 0 && n == 0 },
			"upstream connections still serving the stalled streams")
		env.assertHealthy(t)
	})
}

// TestH2HeaderBlockTimeout leaves a header block open (HEADERS without
// END_HEADERS, then empty CONTINUATION frames): the connection is closed
// with GOAWAY within the read header timeout.
func TestH2HeaderBlockTimeout(t *testing.T) {
	tests := []struct {
		desc  string
		conts int
	}{
		{desc: "HEADERS without END_HEADERS", conts: 0},
		{desc: "empty CONTINUATION frames", conts: 3},
	}
	forEachH2Server(t, testConfig(), func(t *testing.T, cfg conf.Listener) {
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				cfg.ReadHeaderTimeout = 300 * time.Millisecond
				env := startH2Env(t, cfg, startRawUpstream(t).addr())
				hc := dialH2(t, env.srv.Addr().String())
				b := hc.block()
				start := time.Now()
				hc.write(func() error {
					return hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:1], EndStream: true})
				})
				for range tc.conts {
					hc.write(func() error { return hc.fr.WriteContinuation(1, false, nil) })
				}
				ev := hc.readUntil(5*time.Second, closedConn)
				if ev.goaway == nil {
					t.Error("connection closed without GOAWAY")
				}
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("closed after %v, want about the read header timeout", took)
				}
			})
		}
	})
}

// TestH2Floods sends each flood from one connection: the connection is
// closed with GOAWAY and the server's goroutines return to their count
// before the connection. The client writes its frames in batches, so
// that it takes little of the CPU the server needs.
func TestH2Floods(t *testing.T) {
	const batch = 32 // flood iterations a write
	tests := []struct {
		desc string
		// maxControl is the guard's limit of control frames a second
		// (0: the default). Each stream a rapid reset opens costs the
		// server a handler and an upstream dial: a busy machine may
		// serve fewer than the default 1000 a second, which the guard
		// then rightly lets through (h2guard's own tests check the
		// default limit in virtual time).
		maxControl int
		flood      func(fr *http2.Framer, i int, b []byte) error
	}{
		{desc: "rapid reset", maxControl: 100, flood: func(fr *http2.Framer, i int, b []byte) error {
			id := uint32(2*i + 1)
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndStream: true, EndHeaders: true}); err != nil {
				return err
			}
			return fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}},
		{desc: "CONTINUATION flood", flood: func(fr *http2.Framer, i int, b []byte) error {
			if i == 0 {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:1]})
			}
			return fr.WriteContinuation(1, false, []byte{0x40, 0x01, 'x', 0x01, 'y'}[:i%2])
		}},
		{desc: "SETTINGS flood", flood: func(fr *http2.Framer, i int, _ []byte) error { return fr.WriteSettings() }},
		{desc: "PING flood", flood: func(fr *http2.Framer, i int, _ []byte) error { return fr.WritePing(false, [8]byte{byte(i)}) }},
	}
	forEachH2Server(t, testConfig(), func(t *testing.T, cfg conf.Listener) {
		for _, tc := range tests {
			t.Run(tc.desc, func(t *testing.T) {
				var tune func(*h2guard.Config)
				if tc.maxControl > 0 {
					tune = func(g *h2guard.Config) { g.MaxControlPerSecond = tc.maxControl }
				}
				env := startH2EnvGuard(t, cfg, tune, startRawUpstream(t).addr())
				runtime.GC()
				base := runtime.NumGoroutine()
				hc := dialH2(t, env.srv.Addr().String())
				b := hc.block() // the same bytes each time: HPACK allows it
				done := make(chan struct{})
				go func() {
					defer close(done)
					bw := bufio.NewWriter(hc.c)
					fr := http2.NewFramer(bw, nil)
					for i := 0; i < 100000; i += batch {
						hc.wmu.Lock()
						var err error
						for j := i; j < i+batch && err == nil; j++ {
							err = tc.flood(fr, j, b)
						}
						if err == nil {
							err = bw.Flush()
						}
						hc.wmu.Unlock()
						if err != nil {
							return // the server closed the connection
						}
					}
				}()
				ev := hc.readUntil(10*time.Second, closedConn)
				hc.c.Close()
				<-done
				if ev.goaway == nil {
					t.Errorf("connection closed without GOAWAY after %d frames", ev.frames)
				} else if ev.goaway.ErrCode != http2.ErrCodeEnhanceYourCalm && ev.goaway.ErrCode != http2.ErrCodeProtocol {
					t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM or PROTOCOL_ERROR", ev.goaway.ErrCode)
				}
				settleGoroutines(t, base)
			})
		}
	})
}
