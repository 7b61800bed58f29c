package testutil

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// FullBacklog returns the address of a loopback socket that listens with a
// backlog of 0 and never accepts, after filling its accept queue: Linux
// then drops further SYNs, so a dial to it really times out. It skips the
// test where the queue cannot be filled.
func FullBacklog(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	a := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	for range 16 {
		c, err := net.DialTimeout("tcp", a, 100*time.Millisecond)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return a
		}
		if err != nil {
			t.Skipf("cannot fill the accept queue: %v", err)
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("loopback accept queue never filled; connect timeout not testable here")
	return ""
}
