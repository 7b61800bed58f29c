package router

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// fullBacklog returns the address of a loopback socket that listens with a
// backlog of 0 and never accepts, after filling its accept queue: Linux
// then drops further SYNs, so a dial really times out.
func fullBacklog(t *testing.T) string {
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

func TestConnectTimeout(t *testing.T) {
	t.Parallel()
	a := fullBacklog(t)
	start := time.Now()
	status, body, _ := errorThrough(t, a, func(u *conf.Upstream) { u.ConnectTimeout = 150 * time.Millisecond })
	if status != 504 || body != "Gateway Timeout\n" {
		t.Errorf("got %d %q, want 504", status, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}
