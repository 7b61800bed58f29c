//go:build unix

package upstream

import (
	"net"
	"syscall"
)

// alive peeks at an idle connection without blocking: it is alive when
// nothing can be read yet. EOF means the server closed it; unexpected bytes
// mean its framing is unknown; either way it must not be used.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		_ = n
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && ok
}
