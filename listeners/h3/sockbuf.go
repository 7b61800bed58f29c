package h3

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// DefaultBufferSize is what quic-go asks of the kernel for each UDP
// buffer (its desiredBufferSize on Linux), and so the size Listen warns
// about when the kernel caps a buffer below it and no size is set.
const DefaultBufferSize = 7 << 20

func init() {
	// quic-go logs its own note when the kernel caps a buffer; Listen
	// reports the same finding through Warnings, naming the sysctl.
	if os.Getenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING") == "" {
		os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	}
}

// setBuffers runs after quic-go has raised the socket's buffers as far
// as it can (with SO_RCVBUFFORCE where allowed): it sets the sizes asked,
// if any, and returns a warning for each buffer the kernel capped below
// the size asked (quic-go's when zero).
func setBuffers(pc *net.UDPConn, rcv, snd int) []string {
	if rcv > 0 {
		_ = pc.SetReadBuffer(rcv)
	} else {
		rcv = DefaultBufferSize
	}
	if snd > 0 {
		_ = pc.SetWriteBuffer(snd)
	} else {
		snd = DefaultBufferSize
	}
	var warns []string
	for _, b := range []struct {
		opt    int
		want   int
		what   string
		sysctl string
	}{
		{syscall.SO_RCVBUF, rcv, "receive", "net.core.rmem_max"},
		{syscall.SO_SNDBUF, snd, "send", "net.core.wmem_max"},
	} {
		got, err := sockopt(pc, b.opt)
		if err != nil {
			continue
		}
		// Linux reports twice the size set, its bookkeeping included.
		if got/2 < b.want {
			warns = append(warns, fmt.Sprintf("the kernel capped the UDP %s buffer at %d KiB (asked %d KiB); raise it with sysctl -w %s=%d",
				b.what, got/2/1024, b.want/1024, b.sysctl, b.want))
		}
	}
	return warns
}

func sockopt(pc *net.UDPConn, opt int) (int, error) {
	rc, err := pc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var v int
	var serr error
	err = rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt) })
	if err != nil {
		return 0, err
	}
	return v, serr
}
