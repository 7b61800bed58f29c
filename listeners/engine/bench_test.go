//go:build linux

package engine

import (
	"io"
	"net"
	"testing"
	"time"
)

// BenchmarkKeepAlive measures one request on a keep-alive connection
// through the whole engine: the client writes a line, the loop dispatches
// the parked connection, the handler reads it, answers and parks again,
// the client reads the answer. GoPoller is the *net.TCPConn mode, for
// comparison.
//
//	go test -run XXX -bench KeepAlive ./listeners/engine
func BenchmarkKeepAlive(b *testing.B) {
	for _, bc := range []struct {
		name     string
		goPoller bool
	}{{"own", false}, {"GoPoller", true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.GoPoller = bc.goPoller
			resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			buf := make([]byte, 512) // one connection, one request at a time
			e := start(b, cfg, handlerFunc(func(c *Conn) Action {
				if _, err := c.Read(buf); err != nil {
					return Close
				}
				if _, err := c.Write(resp); err != nil {
					return Close
				}
				return Park
			}))
			c := dial(b, e)
			req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			got := make([]byte, len(resp))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConnect measures a connection's life: dial, one request and
// answer, close. Run under strace -c -f it counts the system calls of
// an accept in each mode (the client's calls are the same in both).
func BenchmarkConnect(b *testing.B) {
	for _, bc := range []struct {
		name     string
		goPoller bool
	}{{"own", false}, {"GoPoller", true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := testConfig()
			cfg.GoPoller = bc.goPoller
			cfg.KeepAlive, cfg.KeepAliveIdle, cfg.KeepAliveInterval, cfg.KeepAliveCount = true, time.Minute, 15*time.Second, 4
			e := start(b, cfg, &lineHandler{})
			b.ReportAllocs()
			for b.Loop() {
				c, err := net.Dial("tcp", e.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				roundTrip(b, c, "x")
				c.(*net.TCPConn).SetLinger(0) // no TIME_WAIT pile-up
				c.Close()
			}
		})
	}
}
