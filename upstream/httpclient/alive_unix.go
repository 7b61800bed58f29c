//go:build unix

package httpclient

import (
	"net"
	"syscall"
	"unsafe"
)

// prober peeks at an idle connection without blocking. It is built once
// per connection so that a check allocates nothing: one recvfrom(2) with
// MSG_PEEK|MSG_DONTWAIT.
type prober struct {
	rc   syscall.RawConn
	ok   bool
	b    [1]byte
	peek func(fd uintptr) bool
}

func newProber(nc net.Conn) *prober {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	p := &prober{rc: rc}
	p.peek = func(fd uintptr) bool {
		_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p.b[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		p.ok = errno == syscall.EAGAIN || errno == syscall.EWOULDBLOCK
		return true
	}
	return p
}

// alive reports whether the connection can carry a new request: nothing
// can be read from it yet. EOF means the server closed it; bytes mean it
// sent something no request asked for, so its framing is unknown; either
// way it must not be used.
func (p *prober) alive() bool {
	if p == nil {
		return true
	}
	p.ok = false
	return p.rc.Read(p.peek) == nil && p.ok
}
