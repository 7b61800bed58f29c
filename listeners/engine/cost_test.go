//go:build linux

package engine

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCost measures what a parked connection and a parked tunnel cost in
// process memory (RSS). The engine runs in a child process (this test
// binary again, in TestCostChild) so that the figures hold only its
// memory; the parent opens the connections from several loopback source
// addresses and asks the child to measure after a GC and
// debug.FreeOSMemory. It takes some seconds and 20,000 file descriptors
// between the two processes, so it is skipped with -short and -race.
//
//	go test -run TestCost -v ./listeners/engine/
func TestCost(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measurement: skipped with -short and -race")
	}
	raiseFileLimit(t)
	t.Run("parked", func(t *testing.T) {
		ch := startChild(t, "")
		openParked(t, ch, 0, warmUp)
		ch.base = ch.measure()
		openParked(t, ch, warmUp, 10_000)
		ch.cost("parked keep-alive connection", 10_000-warmUp, 640)
	})
	t.Run("tunnel", func(t *testing.T) {
		u := newUpstream(t)
		ch := startChild(t, u.ln.Addr().String())
		openTunnels(t, ch, u, 0, warmUp)
		ch.base = ch.measure()
		openTunnels(t, ch, u, warmUp, 4_000)
		ch.cost("parked tunnel (client and upstream sockets)", 4_000-warmUp, 1280)
	})
}

// warmUp connections are opened before the base measurement, so that
// code and pools first touched by a connection do not count.
const warmUp = 500

// child is the engine process under measurement.
type child struct {
	t    *testing.T
	addr string
	in   *os.File
	out  *bufio.Scanner
	base sample
}

// sample is one measurement in the child.
type sample struct {
	RSS, Heap, Stack int64 // bytes
	Other            int64 // runtime.MemStats.OtherSys: Go's poll descriptors
	Goroutines       int
	Stats            Stats
}

func startChild(t *testing.T, upstream string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCostChild$")
	cmd.Env = append(os.Environ(), "ENGINE_COST_CHILD=1", "ENGINE_COST_UPSTREAM="+upstream)
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
	ch := &child{t: t, in: in.(*os.File), out: bufio.NewScanner(out)}
	ch.addr = ch.line()
	ch.base = ch.measure()
	return ch
}

func (ch *child) line() string {
	if !ch.out.Scan() {
		ch.t.Fatalf("child ended: %v", ch.out.Err())
	}
	return ch.out.Text()
}

func (ch *child) measure() sample {
	fmt.Fprintln(ch.in, "measure")
	var s sample
	fmt.Sscan(ch.line(), &s.RSS, &s.Heap, &s.Stack, &s.Other, &s.Goroutines,
		&s.Stats.Open, &s.Stats.Parked, &s.Stats.Active, &s.Stats.Tunnels)
	return s
}

// waitFor measures until cond holds.
func (ch *child) waitFor(what string, cond func(Stats) bool) sample {
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := ch.measure()
		if cond(s.Stats) {
			return s
		}
		if time.Now().After(deadline) {
			ch.t.Fatalf("waiting for %s: %+v", what, s.Stats)
		}
	}
}

// cost reports the growth per connection since the base measurement and
// fails the test above limit bytes.
func (ch *child) cost(what string, n int, limit int64) {
	s := ch.measure()
	per := func(a, b int64) int64 { return (a - b) / int64(n) }
	rss := per(s.RSS, ch.base.RSS)
	ch.t.Logf("%s: %d bytes RSS each (Go heap %d, runtime poll descriptors %d, stacks %d; %d goroutines for %d)",
		what, rss, per(s.Heap, ch.base.Heap), per(s.Other, ch.base.Other), per(s.Stack, ch.base.Stack), s.Goroutines, n)
	if rss > limit {
		ch.t.Errorf("%s costs %d bytes, more than %d", what, rss, limit)
	}
}

// dialFrom dials the child from 127.0.0.2 and up, 5,000 connections per
// source address (the ephemeral port range allows about 28,000).
func dialFrom(t *testing.T, addr string, i int) net.Conn {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i/5000))}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("connection %d: %v", i, err)
	}
	// Closed with a reset: thousands of TIME_WAIT sockets would exhaust
	// the source ports of the next run.
	c.(*net.TCPConn).SetLinger(0)
	return c
}

// openParked opens connections from to n (numbers for dialFrom) and
// waits until they are all parked.
func openParked(t *testing.T, ch *child, from, n int) {
	for i := from; i < n; i++ {
		c := dialFrom(t, ch.addr, i)
		t.Cleanup(func() { c.Close() })
		roundTrip(t, c, "x")
	}
	ch.waitFor("every connection to park", func(s Stats) bool { return s.Parked == n && s.Active == 0 })
}

// openTunnels opens tunnels from to n and waits until they are parked.
func openTunnels(t *testing.T, ch *child, u *upstream, from, n int) {
	for i := from; i < n; i++ {
		c := dialFrom(t, ch.addr, i)
		t.Cleanup(func() { c.Close() })
		c.Write([]byte("tunnel\n"))
		readN(t, c, len("<to-client>"))
		up := u.next(t)
		up.(*net.TCPConn).SetLinger(0)
		readN(t, up, len("<to-up>"))
	}
	ch.waitFor("every tunnel to park", func(s Stats) bool { return s.Tunnels == n && s.Active == 0 })
}

// TestCostChild is the child process of TestCost: it serves lineHandler
// (with tunnels to ENGINE_COST_UPSTREAM), prints its address, then
// answers each "measure" line on stdin with a sample.
func TestCostChild(t *testing.T) {
	if os.Getenv("ENGINE_COST_CHILD") != "1" {
		t.Skip("run by TestCost")
	}
	raiseFileLimit(t)
	h := &lineHandler{}
	if up := os.Getenv("ENGINE_COST_UPSTREAM"); up != "" {
		h = tunnelHandler(&upstream{ln: fakeAddr(up)})
	}
	cfg := testConfig()
	cfg.Loops = 0
	e := start(t, cfg, h)
	fmt.Println(e.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(sampleSelf(e))
	}
}

func sampleSelf(e *Engine) string {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s := e.Stats()
	return fmt.Sprintf("%d %d %d %d %d %d %d %d %d", rss(), m.HeapInuse, m.StackInuse, m.OtherSys, runtime.NumGoroutine(),
		s.Open, s.Parked, s.Active, s.Tunnels)
}

// rss reads the process's resident memory from /proc/self/smaps_rollup.
func rss() int64 {
	b, _ := os.ReadFile("/proc/self/smaps_rollup")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Rss:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func raiseFileLimit(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 12_000 {
		t.Skipf("RLIMIT_NOFILE hard limit %d: at least 12,000 needed", lim.Max)
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// fakeAddr is a listener that only reports an address, for tunnelHandler
// in the child.
type fakeAddr string

func (a fakeAddr) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (a fakeAddr) Close() error              { return nil }
func (a fakeAddr) Addr() net.Addr            { addr, _ := net.ResolveTCPAddr("tcp", string(a)); return addr }
