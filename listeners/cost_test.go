//go:build linux

package listeners

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestIdleTLSCost measures what an idle connection over TLS costs in
// process memory (RSS), HTTP/1.1 and HTTP/2: a TLS listener (h2 and
// http1 by ALPN) runs in a child process (this test binary again, in
// TestIdleTLSCostChild), the parent opens costConns connections from
// 127.0.0.2 and up, each with a full handshake and one request answered,
// and the child measures its growth after a GC and debug.FreeOSMemory.
// It takes some seconds of handshakes, so it is skipped with -short and
// -race.
//
//	go test -run TestIdleTLSCost -v ./listeners/
func TestIdleTLSCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measurement: skipped with -short and -race")
	}
	raiseFileLimit(t, 2*costConns+200)
	for _, tc := range []struct {
		proto string
		limit int64 // bytes per connection
	}{
		{proto: "http/1.1", limit: 10 << 10},
		{proto: "h2", limit: 11 << 10}, // 30 KB and two goroutines before parking; about 10 KB since
	} {
		t.Run(tc.proto, func(t *testing.T) {
			ch := startCostChild(t)
			var held []net.Conn
			t.Cleanup(func() {
				for _, c := range held {
					c.Close()
				}
			})
			open := func(from, to int) {
				for i := from; i < to; i++ {
					held = append(held, openIdleTLS(t, ch.addr, i, tc.proto))
				}
				ch.waitIdle(t, to)
			}
			open(0, costWarmUp)
			base := ch.measure(t)
			open(costWarmUp, costConns)
			s := ch.measure(t)
			n := int64(costConns - costWarmUp)
			per := func(a, b int64) int64 { return (a - b) / n }
			rss := per(s.rss, base.rss)
			t.Logf("idle %s connection over TLS: %d bytes RSS each (Go heap %d, stacks %d, runtime poll descriptors %d); goroutines %d -> %d for %d more connections",
				tc.proto, rss, per(s.heap, base.heap), per(s.stack, base.stack), per(s.other, base.other), base.goroutines, s.goroutines, n)
			if rss > tc.limit {
				t.Errorf("an idle %s connection costs %d bytes, more than %d", tc.proto, rss, tc.limit)
			}
		})
	}
}

// Connections opened per measurement, the first costWarmUp before the
// base sample (so that code and pools first touched do not count).
const (
	costConns  = 3000
	costWarmUp = 500
)

// costChild is the listener process under measurement.
type costChild struct {
	addr string
	in   io.WriteCloser
	out  *bufio.Scanner
}

// costSample is one measurement in the child.
type costSample struct {
	rss, heap, stack, other int64
	goroutines, open, busy  int
}

func startCostChild(t *testing.T) *costChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleTLSCostChild$")
	cmd.Env = append(os.Environ(), "LISTENERS_COST_CHILD=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	ch := &costChild{in: in, out: bufio.NewScanner(out)}
	ch.addr = ch.line(t)
	return ch
}

func (ch *costChild) line(t *testing.T) string {
	if !ch.out.Scan() {
		t.Fatalf("child ended: %v", ch.out.Err())
	}
	return ch.out.Text()
}

func (ch *costChild) measure(t *testing.T) costSample {
	fmt.Fprintln(ch.in, "measure")
	var s costSample
	fmt.Sscan(ch.line(t), &s.rss, &s.heap, &s.stack, &s.other, &s.goroutines, &s.open, &s.busy)
	return s
}

// waitIdle measures until n connections are open and none is being
// served (parked, or detached to a server of their own).
func (ch *costChild) waitIdle(t *testing.T, n int) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := ch.measure(t)
		if s.open == n && s.busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %d idle connections: %+v", n, s)
		}
	}
}

// openIdleTLS opens connection i (from 127.0.0.2 and up, 5,000 per
// address) with ALPN proto, sends one GET / and reads its answer.
func openIdleTLS(t *testing.T, addr string, i int, proto string) net.Conn {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/5000))}, Timeout: 10 * time.Second}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("connection %d: %v", i, err)
	}
	// Closed with a reset: thousands of TIME_WAIT sockets would exhaust
	// the source ports of the next run.
	raw.(*net.TCPConn).SetLinger(0)
	c := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, ServerName: "site.test", NextProtos: []string{proto}})
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if proto == "h2" {
		err = h2RoundTrip(c)
	} else {
		err = h1RoundTrip(c)
	}
	if err != nil {
		raw.Close()
		t.Fatalf("connection %d (%s): %v", i, proto, err)
	}
	c.SetDeadline(time.Time{})
	return raw
}

func h1RoundTrip(c *tls.Conn) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: site.test\r\n\r\n"); err != nil {
		return err
	}
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			break
		}
	}
	_, err := io.ReadFull(br, make([]byte, len("ok")))
	return err
}

// h2RoundTrip sends the preface, SETTINGS and a GET /, acknowledges the
// server's SETTINGS and reads until the answer ends.
func h2RoundTrip(c *tls.Conn) error {
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "site.test"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	bw := bufio.NewWriter(c)
	fr := http2.NewFramer(bw, c)
	io.WriteString(bw, http2.ClientPreface)
	fr.WriteSettings()
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
	if err := bw.Flush(); err != nil {
		return err
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
				bw.Flush()
			}
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		}
		if f.Header().StreamID == 1 && f.Header().Flags.Has(http2.FlagDataEndStream) {
			return nil
		}
	}
}

// TestIdleTLSCostChild is the child process of TestIdleTLSCost: it
// serves a TLS listener answering "ok", prints its address, then answers
// each "measure" line on stdin with a sample.
func TestIdleTLSCostChild(t *testing.T) {
	if os.Getenv("LISTENERS_COST_CHILD") != "1" {
		t.Skip("run by TestIdleTLSCost")
	}
	raiseFileLimit(t, 2*costConns+200)
	if os.Getenv("LISTENERS_COST_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	ca := testutil.NewCA(t, "cost CA")
	cfg := testConfig()
	cfg.Protocols = []string{"tls", "http1", "h2"}
	cfg.IdleTimeout = time.Hour
	h := okText()
	s, err := ListenWith(cfg, h, slog.New(slog.DiscardHandler), Options{TLS: &tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "site.test")}}})
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	fmt.Println(s.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if f := os.Getenv("LISTENERS_COST_PROFILE"); f != "" {
			if pf, err := os.Create(f); err == nil {
				pprof.WriteHeapProfile(pf)
				pf.Close()
			}
		}
		st := s.Stats()
		fmt.Println(selfRSS(), m.HeapInuse, m.StackInuse, m.OtherSys, runtime.NumGoroutine(), st.Open, st.Active)
	}
}

// okText answers "ok".
func okText() httpmsg.Handler {
	return httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) { reply(w, "ok") })
}

// selfRSS reads the process's resident memory from
// /proc/self/smaps_rollup.
func selfRSS() int64 {
	b, _ := os.ReadFile("/proc/self/smaps_rollup")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Rss:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// raiseFileLimit raises the soft file limit to the hard one; the test is
// skipped when that is under need.
func raiseFileLimit(t *testing.T, need uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < need {
		t.Skipf("RLIMIT_NOFILE hard limit %d: at least %d needed", lim.Max, need)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}
