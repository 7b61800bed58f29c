//go:build linux && (amd64 || arm64 || 386 || arm || riscv64 || ppc64 || ppc64le || s390x || loong64)

package listeners

import (
	"net"
	"syscall"
	"testing"
	"unsafe"
)

// tcpInfo reads TCP_INFO; for a listening socket Linux reports the backlog
// limit in Sacked and the accept queue length in Unacked.
func tcpInfo(t *testing.T, sc syscall.Conn) syscall.TCPInfo {
	t.Helper()
	rc, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var info syscall.TCPInfo
	var errno syscall.Errno
	rc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(info))
		_, _, errno = syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
	})
	if errno != 0 {
		t.Fatal(errno)
	}
	return info
}

func TestBacklog(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.Backlog = 7
	s, err := Listen(cfg, okHandler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.ln.Close()
	if got := tcpInfo(t, s.ln.Listener.(*net.TCPListener)).Sacked; got != 7 {
		t.Fatalf("backlog %d, want 7", got)
	}
}

func TestReusePort(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ReusePort = true
	a, err := Listen(cfg, okHandler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.ln.Close()
	cfg.Addr = a.Addr().String()
	b, err := Listen(cfg, okHandler(), nil)
	if err != nil {
		t.Fatalf("second SO_REUSEPORT listener: %v", err)
	}
	b.ln.Close()
	cfg.ReusePort = false
	if c, err := Listen(cfg, okHandler(), nil); err == nil {
		c.ln.Close()
		t.Fatal("second listener without SO_REUSEPORT bound the same port")
	}
}

func TestNoDelay(t *testing.T) {
	t.Parallel()
	for _, want := range []bool{true, false} {
		cfg := testConfig()
		cfg.NoDelay = want
		s, err := Listen(cfg, okHandler(), nil)
		if err != nil {
			t.Fatal(err)
		}
		client, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		nc, err := s.ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		rc, _ := nc.(*conn).Conn.(*net.TCPConn).SyscallConn()
		var v int
		rc.Control(func(fd uintptr) { v, err = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY) })
		if err != nil || (v != 0) != want {
			t.Errorf("NoDelay %v: TCP_NODELAY=%d, %v", want, v, err)
		}
		nc.Close()
		client.Close()
		s.ln.Close()
	}
}
