//go:build linux

package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// listenAll opens the listening sockets: cfg.acceptLoops() of them on one
// address with ReusePort, else one.
func listenAll(cfg *Config) ([]*net.TCPListener, error) {
	lc := listenConfig(cfg)
	addr := cfg.Addr
	var lns []*net.TCPListener
	for range cfg.acceptLoops() {
		ln, err := listenOne(lc, addr, cfg.Backlog)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
		addr = ln.Addr().String() // the others share the port picked for :0
	}
	return lns, nil
}

func listenOne(lc *net.ListenConfig, addr string, backlog int) (*net.TCPListener, error) {
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	tl := ln.(*net.TCPListener)
	if backlog > 0 {
		if err := setBacklog(tl, backlog); err != nil {
			tl.Close()
			return nil, err
		}
	}
	return tl, nil
}

// listenConfig sets the listening socket's options before bind, and the
// keepalive settings Go applies to each accepted connection (0 in our
// Config leaves a setting alone: -1 for Go).
func listenConfig(cfg *Config) *net.ListenConfig {
	lc := &net.ListenConfig{
		Control: func(_, _ string, rc syscall.RawConn) error { return control(cfg, rc) },
	}
	if !cfg.KeepAlive {
		lc.KeepAlive = -1
		return lc
	}
	orKeep := func(d time.Duration) time.Duration { return cmp0(d, -1) }
	lc.KeepAliveConfig = net.KeepAliveConfig{
		Enable:   true,
		Idle:     orKeep(cfg.KeepAliveIdle),
		Interval: orKeep(cfg.KeepAliveInterval),
		Count:    int(cmp0(time.Duration(cfg.KeepAliveCount), -1)),
	}
	return lc
}

// cmp0 returns v, or def when v is 0.
func cmp0(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// sockopt is one integer socket option set on the listening socket.
type sockopt struct {
	name       string
	level, opt int
	value      int
	unlessZero bool // skip when value is 0
}

// listenOpts are set on each listening socket before bind. Accepted
// sockets inherit them (keepalive included: the engine's own accept sets
// nothing per connection).
func listenOpts(cfg *Config) []sockopt {
	ka := cfg.KeepAlive
	return []sockopt{
		{"SO_KEEPALIVE", unix.SOL_SOCKET, unix.SO_KEEPALIVE, boolInt(ka), true},
		{"TCP_KEEPIDLE", unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, ifOn(ka, ceilSeconds(cfg.KeepAliveIdle)), true},
		{"TCP_KEEPINTVL", unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, ifOn(ka, ceilSeconds(cfg.KeepAliveInterval)), true},
		{"TCP_KEEPCNT", unix.IPPROTO_TCP, unix.TCP_KEEPCNT, ifOn(ka, cfg.KeepAliveCount), true},
		{"SO_REUSEPORT", unix.SOL_SOCKET, unix.SO_REUSEPORT, boolInt(cfg.ReusePort), true},
		{"SO_RCVBUF", unix.SOL_SOCKET, unix.SO_RCVBUF, cfg.RecvBuffer, true},
		{"SO_SNDBUF", unix.SOL_SOCKET, unix.SO_SNDBUF, cfg.SendBuffer, true},
		{"TCP_FASTOPEN", unix.IPPROTO_TCP, unix.TCP_FASTOPEN, cfg.FastOpen, true},
		{"TCP_DEFER_ACCEPT", unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, ceilSeconds(cfg.DeferAccept), true},
	}
}

func control(cfg *Config, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		for _, o := range listenOpts(cfg) {
			if o.unlessZero && o.value == 0 {
				continue
			}
			if err := unix.SetsockoptInt(int(fd), o.level, o.opt, o.value); err != nil {
				serr = fmt.Errorf("setting %s to %d: %w", o.name, o.value, err)
				return
			}
		}
	})
	return errors.Join(err, serr)
}

// setBacklog calls listen(2) again on the bound socket, which Linux
// allows in order to change the backlog (net.Listen uses somaxconn).
func setBacklog(ln *net.TCPListener, n int) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return fmt.Errorf("setting backlog: %w", err)
	}
	var lerr error
	err = rc.Control(func(fd uintptr) { lerr = unix.Listen(int(fd), n) })
	if err = errors.Join(err, lerr); err != nil {
		return fmt.Errorf("setting backlog: %w", err)
	}
	return nil
}

// setNoDelay sets TCP_NODELAY on a listening socket, which the sockets it
// accepts from then on inherit.
func setNoDelay(ln *net.TCPListener, on bool) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return fmt.Errorf("setting TCP_NODELAY: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, boolInt(on)) })
	if err = errors.Join(err, serr); err != nil {
		return fmt.Errorf("setting TCP_NODELAY: %w", err)
	}
	return nil
}

// ifOn is v when on, else 0 (not set).
func ifOn(on bool, v int) int {
	if on {
		return v
	}
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// dupFD duplicates c's descriptor, close-on-exec. The duplicate shares
// the open file, O_NONBLOCK included.
func dupFD(c syscall.Conn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	return fd, nil
}
