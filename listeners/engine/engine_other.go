//go:build !linux

package engine

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
)

// The engine parks connections on epoll: other systems get an error from
// Listen. These stubs only keep the package compiling there.

var errLinuxOnly = errors.New("the connection engine requires Linux")

type loop struct{ e *Engine }

type tunnel struct{}

type owner struct{}

type fdConn struct {
	net.Conn
	remote, local netip.AddrPort
}

func (*fdConn) SyscallConn() (syscall.RawConn, error) { return nil, errLinuxOnly }

func (*fdConn) CloseWrite() error   { return errLinuxOnly }
func (*fdConn) SetLinger(int) error { return errLinuxOnly }

func (*fdConn) arm(*loop, *watch) error                        { return errLinuxOnly }
func (*fdConn) dropWaiter()                                    {}
func (*fdConn) readNow([]byte) (int, error)                    { return 0, errLinuxOnly }
func (*fdConn) writeBuffers(*net.Buffers) (int64, error)       { return 0, errLinuxOnly }
func newAcceptor(*Engine, *net.TCPListener) (*acceptor, error) { return nil, errLinuxOnly }

type acceptor struct{}

func (*acceptor) accept(*net.TCPListener) error { return errLinuxOnly }
func (*acceptor) close()                        {}
func setNoDelay(*net.TCPListener, bool) error   { return errLinuxOnly }

func listenAll(*Config) ([]*net.TCPListener, error) { return nil, errLinuxOnly }
func newLoop(*Engine) (*loop, error)                { return nil, errLinuxOnly }
func startTunnel(*Conn, *tunnelReq)                 {}

func (*loop) start()                     {}
func (*loop) stop()                      {}
func (*loop) add(*watch)                 {}
func (*loop) arm(*watch, int) error      { return errLinuxOnly }
func (*loop) detach(*watch)              {}
func (*loop) forget(*watch) uint8        { return stClosed }
func (*loop) claimIdle() []*Conn         { return nil }
func (*loop) all() []owner               { return nil }
func (*tunnel) pump(uint8)               {}
func (*tunnel) pumpInline(uint8, []byte) {}
func (owner) close()                     {}
