//go:build linux

package engine

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// acceptor takes connections off one listening socket with accept4(2):
// each is a non-blocking descriptor of the engine's own (fdConn), never
// registered in Go's poller. The listening socket itself is waited on in
// Go's poller, through a duplicate of its descriptor held as an *os.File
// (a *net.TCPListener's RawConn has no Read); closing it ends the loop.
type acceptor struct {
	e     *Engine
	f     *os.File
	raw   syscall.RawConn
	local netip.AddrPort // the listening address, unless it is a wildcard
	fn    func(fd uintptr) bool
	nfd   int
	sa    syscall.Sockaddr
	err   error
	shut  atomic.Bool // close was called
}

func newAcceptor(e *Engine, ln *net.TCPListener) (*acceptor, error) {
	dup, err := dupFD(ln)
	if err != nil {
		return nil, fmt.Errorf("accepting: duplicating the listening socket: %w", err)
	}
	// The duplicate shares the socket's O_NONBLOCK: os.NewFile puts it in
	// Go's poller.
	f := os.NewFile(uintptr(dup), "listener")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("accepting: %w", err)
	}
	a := &acceptor{e: e, f: f, raw: raw}
	if la := ln.Addr().(*net.TCPAddr).AddrPort(); !la.Addr().IsUnspecified() {
		a.local = la
	}
	a.fn = a.try
	return a, nil
}

// close closes the duplicate: a waiting accept returns an error that
// wraps net.ErrClosed, as a closed net.Listener's Accept does.
func (a *acceptor) close() {
	a.shut.Store(true)
	a.f.Close()
}

// try is one accept4(2), through RawConn.Read: false (wait) on EAGAIN.
// It is syscall's: x/sys/unix's asks each AF_INET socket its protocol
// (getsockopt SO_PROTOCOL, for L2TP), a system call per connection.
func (a *acceptor) try(fd uintptr) bool {
	a.nfd, a.sa, a.err = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
	return a.err != syscall.EAGAIN
}

// accept waits for one connection and adopts it. Options set on the
// listening socket (TCP_NODELAY, keepalive, buffer sizes) are inherited
// by the accepted one: nothing is set per connection.
func (a *acceptor) accept(*net.TCPListener) error {
	for {
		if err := a.raw.Read(a.fn); err != nil {
			if a.shut.Load() {
				// The *os.File's RawConn says "use of closed file", which
				// matches neither os.ErrClosed nor net.ErrClosed.
				return fmt.Errorf("accepting: %w", net.ErrClosed)
			}
			return fmt.Errorf("accepting: %w", err)
		}
		switch a.err {
		case nil:
		case syscall.ECONNABORTED, syscall.EINTR:
			continue // gone before we took it, as net does
		default:
			return fmt.Errorf("accepting: %w", a.err)
		}
		fd, sa := a.nfd, a.sa
		a.sa = nil
		local := a.local
		if !local.IsValid() {
			lsa, err := syscall.Getsockname(fd)
			if err != nil {
				unix.Close(fd)
				return fmt.Errorf("accepting: %w", errors.Join(err, unix.ECONNABORTED))
			}
			local = sockaddrAddrPort(lsa)
		}
		a.e.adoptFD(fd, sockaddrAddrPort(sa), local)
		return nil
	}
}

// adoptFD registers a new descriptor on a loop and parks it.
func (e *Engine) adoptFD(fd int, remote, local netip.AddrPort) {
	e.open.Add(1)
	l := e.nextLoop()
	c := &Conn{l: l, remote: remote, local: local}
	c.fd.init(&c.w, fd)
	c.Conn, c.sock = &c.fd, &c.fd
	c.w.conn = c
	c.w.raw = (*fdRaw)(&c.fd)
	c.w.reg = regET
	l.add(&c.w)
	c.park()
}
