//go:build !(linux && (amd64 || arm64 || 386 || arm || riscv64 || ppc64 || ppc64le || s390x || loong64))

package listeners

import (
	"errors"
	"fmt"
	"net"

	"github.com/edgeway/edgeway/conf"
)

// listenTCP binds cfg.Addr; socket options are only supported on Linux.
func listenTCP(cfg conf.Listener) (net.Listener, error) {
	if cfg.ReusePort || cfg.Backlog > 0 {
		return nil, errors.New("reuse_port and backlog are only supported on Linux")
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	return ln, nil
}
