//go:build linux && (amd64 || arm64 || 386 || arm || riscv64 || ppc64 || ppc64le || s390x || loong64)

package listeners

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/edgeway/edgeway/conf"
)

// soReusePort is SO_REUSEPORT on these architectures (package syscall does
// not define it).
const soReusePort = 0xf

// listenTCP binds cfg.Addr with cfg's socket options. The backlog is set by
// calling listen(2) again on the bound socket, which Linux allows in order
// to change it (net.Listen always uses net.core.somaxconn).
func listenTCP(cfg conf.Listener) (net.Listener, error) {
	var lc net.ListenConfig
	if cfg.ReusePort {
		lc.Control = setReusePort
	}
	ln, err := lc.Listen(context.Background(), "tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	if cfg.Backlog > 0 {
		if err := setBacklog(ln.(*net.TCPListener), cfg.Backlog); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return ln, nil
}

func setReusePort(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, soReusePort, 1)
	})
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("setting SO_REUSEPORT: %w", err)
	}
	return nil
}

func setBacklog(ln *net.TCPListener, n int) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return fmt.Errorf("setting backlog: %w", err)
	}
	var lerr error
	err = rc.Control(func(fd uintptr) { lerr = syscall.Listen(int(fd), n) })
	if err = errors.Join(err, lerr); err != nil {
		return fmt.Errorf("setting backlog: %w", err)
	}
	return nil
}
