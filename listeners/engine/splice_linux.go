package engine

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// Bulk tunnel transfers go through the kernel: splice(2) moves bytes from
// the source socket into a pipe and from the pipe into the destination
// socket, so a long burst (a file download through a WebSocket, a TLS
// stream passed through by SNI) is never copied into edgeway's memory.
// Pipes are kept in a small free list; a pipe is only ever returned empty.

// pipeSize is the capacity asked for each pipe (F_SETPIPE_SZ; the kernel
// caps it at fs.pipe-max-size, 1 MiB by default). A larger pipe moves more
// per system call.
const pipeSize = 256 << 10

// maxFreePipes bounds the pipes kept for reuse (two descriptors each).
const maxFreePipes = 64

// pipe is one kernel pipe.
type pipe struct{ r, w int }

var freePipes = make(chan *pipe, maxFreePipes)

// getPipe returns an empty pipe, or nil when none can be made (the
// descriptor limit): the caller copies through a buffer instead.
func getPipe() *pipe {
	select {
	case p := <-freePipes:
		return p
	default:
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil
	}
	unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, pipeSize) // best effort
	return &pipe{r: fds[0], w: fds[1]}
}

// putPipe keeps an empty pipe for reuse, or closes it.
func putPipe(p *pipe, empty bool) {
	if empty {
		select {
		case freePipes <- p:
			return
		default:
		}
	}
	unix.Close(p.r)
	unix.Close(p.w)
}

// splicePump is pump through a pipe: it moves what direction dir's source
// has now, then parks the source again. Writes wait for the destination
// (on the engine's loop for the client's socket, in
// Go's poller for up), bounded by the tunnel write timeout.
func (t *tunnel) splicePump(dir uint8, p *pipe) {
	src, dst := t.src(dir), t.src(1-dir)
	empty := true
	defer func() { putPipe(p, empty) }()
	for {
		var n int64
		var err error
		if cerr := src.raw.Read(func(fd uintptr) bool {
			n, err = unix.Splice(int(fd), nil, p.w, nil, pipeSize, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			return true
		}); cerr != nil {
			t.close()
			return
		}
		if n > 0 {
			empty = false
			if err := t.drain(dir, dst, p, int(n)); err != nil {
				t.fail(1-dir, err)
				return
			}
			empty = true
			continue
		}
		if !t.idle(dir, src, err) {
			return
		}
	}
}

// drain moves the n bytes in p to dst's socket.
func (t *tunnel) drain(dir uint8, dst *watch, p *pipe, n int) error {
	if d := t.c.engine().cfg.tunnelWriteTimeout(); d > 0 {
		t.dst(dir).SetWriteDeadline(time.Now().Add(d))
		defer t.dst(dir).SetWriteDeadline(time.Time{}) // see write
	}
	for n > 0 {
		var m int64
		var err error
		if cerr := dst.raw.Write(func(fd uintptr) bool {
			m, err = unix.Splice(p.r, nil, int(fd), nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			return !errors.Is(err, unix.EAGAIN) // wait until the socket takes more
		}); cerr != nil {
			return cerr
		}
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		}
		n -= int(m)
		t.moved[dir].Add(m)
	}
	return nil
}
