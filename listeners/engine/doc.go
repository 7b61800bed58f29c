// Package engine owns every client TCP connection of a listener: it
// accepts, parks, dispatches, times out and closes them, so that a
// connection waiting for its next request, or a quiet tunnel, holds no
// goroutine and no buffer. Its tradeoff: client sockets are plain
// descriptors the engine reads, writes and waits on itself, not
// *net.TCPConn, so a parked connection costs about 300 bytes rather than
// a kilobyte, and the engine carries the descriptor's lifetime, deadlines
// and readiness that Go's net package would otherwise handle.
//
// # How a connection moves
//
// The accept goroutine takes each connection with accept4(2)
// (SOCK_NONBLOCK|SOCK_CLOEXEC) on a duplicate of the listening socket
// that Go's poller watches; the new descriptor never enters Go's poller.
// It is an fdConn: a net.Conn and syscall.Conn of the engine's own whose
// Read and Write call read(2) and write(2) directly (writev(2) for
// Conn.WriteBuffers), reference counted so that a Close never lets its
// number be reused under a call in progress. The socket is registered
// once in one of the engine's own epoll instances (golang.org/x/sys/unix),
// edge-triggered, EPOLLIN|EPOLLRDHUP|EPOLLET (EPOLLOUT is added the first
// time a write has to wait), as Go's poller registers a net.Conn. A parked
// connection has no goroutine: when the loop goroutine sees it readable
// (or hung up), it starts a goroutine that calls Handler.Serve. An edge
// that comes while the connection is served is not lost: the loop records
// it (watch.ev), and each read or write clears its direction's record
// before its system call. A read or write there that meets EAGAIN waits
// for the next edge, unless one came since it began: the loop wakes it
// through a channel taken from a pool at the first wait and given back at
// park, and a deadline costs a timer only while a call waits under one.
// Setting a deadline or closing the connection wakes a waiting call, as
// with a net.Conn. A wait costs a hop through the loop goroutine, and no
// epoll_ctl. The loop goroutine itself waits in Go's poller: a duplicate
// of the epoll fd is registered there and events are collected with a
// non-blocking epoll_wait, so no OS thread sits in a blocking system call
// and a dispatched goroutine runs at once (a loop blocked in epoll_wait
// made each one wait for sysmon to retake the P: 31k against 54k requests
// a second on one core). When Serve returns Park, the engine puts the connection at the tail of its loop's idle list and
// the loop dispatches it at its next edge. That needs no system call when
// the handler's last read saw the socket drained (Conn.TryRead or Read
// shorter than its buffer, or EAGAIN) and no edge or end of stream came
// since; otherwise the registration is modified to itself
// (EPOLL_CTL_MOD), which reports the socket at once if it is readable
// now. A connection is dispatched once at a time: an edge while it is
// served only records.
//
// Config.GoPoller keeps the engine of before: each socket a *net.TCPConn
// in Go's poller as well as in the engine's epoll set, registered there
// one-shot (EPOLLONESHOT, re-armed with an EPOLL_CTL_MOD at each park:
// Go's net package reads it, so the engine cannot know it drained); Go's
// poller waits while a handler runs. Conn.Socket returns the accepted socket in either mode.
//
// The idle timeout is the listener's, the same for every connection, so
// each loop keeps its parked connections in a doubly-linked list in park
// order and closes from the head those parked too long, every IdleTimeout/8
// (10ms to 1s): no timer per connection, O(1) work per connection. A
// connection whose next request has begun (a head still arriving, a
// slowloris) can park too: the handler hands the bytes read so far to
// Conn.Hold, which keeps a copy with a deadline (the head timeout, from
// the head's first byte), and Conn.Held gives them back at the next
// dispatch. Such connections are on a second list, scanned whole at
// each sweep (a second at most) and closed past their deadline; the
// idle timeout does not apply to them.
//
// Every epoll_ctl on a connection runs with its descriptor held (the
// engine socket's reference count, or RawConn.Control for a
// *net.TCPConn), which keeps it from being closed (and its number reused)
// meanwhile; each
// registration carries a slot index and a generation, so an event queued
// before a close is recognised as stale and dropped.
//
// Tunnels (Conn.Tunnel, after an HTTP 101) park both sockets. When either
// side is readable, the loop goroutine itself reads once into its own
// 16 KiB buffer and writes the bytes to the other side without blocking:
// a WebSocket message crosses with no goroutine started. A burst that
// fills the buffer goes on in a goroutine that splices (splice(2) through
// a pooled 256 KiB pipe: the bytes never enter edgeway's memory;
// non-blocking reads until EAGAIN; writes may wait for the destination,
// bounded per write by Config.TunnelWriteTimeout), so one busy tunnel
// never holds the loop up; a destination that cannot take a small burst
// at once gets the rest from a pooled 32 KiB buffer, and so does every
// burst when no pipe can be made. A tunnel whose client side is TLS
// (a WebSocket over HTTPS) cannot be copied raw: it keeps two goroutines
// copying through the TLS layer.
// Then the side is parked again. End of stream on one side half-closes
// the other.
//
// # Socket settings
//
// Each comes from the listen block (conf.Listener documents defaults and
// limits; listeners maps it to Config): backlog (re-listen(2) on the bound socket), SO_REUSEPORT with
// one socket and accept goroutine per GOMAXPROCS or AcceptLoops,
// TCP_NODELAY (default on), TCP_DEFER_ACCEPT (default 1s: a connection is
// handed over when its first bytes arrive; HTTP, TLS and PROXY clients
// speak first), TCP_FASTOPEN (default off: SYN data can be replayed),
// keepalive idle/interval/count (default on, 60s/15s/4), SO_RCVBUF and
// SO_SNDBUF (default: kernel autotuning), set on the listening socket and
// inherited by accepted ones: no system call per connection sets an
// option (Engine.SetNoDelay sets TCP_NODELAY on the listening sockets).
// Conn.Abort closes with SO_LINGER 0 (a reset, no TIME_WAIT). MaxConns
// slots are taken before accept, so further clients wait in the kernel
// backlog.
//
// # What a connection costs
//
// Process memory (RSS) per connection, measured by TestCost (go test -run
// TestCost -v): the engine runs in a child process; 10,000 keep-alive
// connections from 127.0.0.2 and up, each served once and parked, or
// 4,000 tunnels; growth after a GC and debug.FreeOSMemory, Go 1.26,
// linux/amd64:
//
//   - Parked idle: about 320 bytes and no goroutine (1,080 with GoPoller,
//     512 of them Go's poll descriptor, runtime.pollDesc, never freed to
//     the heap, and about 300 net's netFD, TCPConn and addresses). It is
//     the Conn with its fdConn (256 bytes; the fdConn is 64 of them:
//     its registration, the descriptor and its reference count, two
//     deadlines, two locks; the Conn keeps the two addresses as
//     netip.AddrPort) and the loop's slot.
//     The kernel's socket memory (2-3 KiB) comes on top and is not in RSS.
//   - Parked with a request begun (Conn.Hold): the above plus the bytes
//     held and 40 bytes, no goroutine.
//   - Being served: the above plus a goroutine (its stack starts at the
//     runtime's average stack size, 2 KiB or more) and whatever the Handler
//     holds (the HTTP/1 server's pooled buffers); a call that waits takes
//     a pooled waiter (two channels, and a timer under a deadline).
//   - Tunnel, idle: about 600 bytes for both sockets and no goroutine
//     (2,180 with GoPoller): the client's Conn and the tunnel struct (168
//     bytes), which holds the upstream side as an engine descriptor too.
//     The upstream connection arrives as a *net.TCPConn (or a wrapper
//     that hands its socket over, httpmsg.TunnelSocket); the engine
//     duplicates its descriptor and closes it, which frees its poll
//     descriptor and netFD (1,420 bytes a tunnel while it kept them).
//   - Tunnel, moving bytes: nothing more for a burst the loop copies at
//     once; a longer one takes a goroutine and a pooled pipe (two
//     descriptors, kernel memory) per direction, returned when the burst
//     ends. Bulk data costs 0.36 s of CPU per GiB (SNI passthrough of a
//     1 GiB TLS stream, scripts/bench-tls.sh), against 0.56 s copying
//     through a buffer.
//   - Detached: the parked cost (the Conn stays registered so that a
//     forced shutdown can close it) plus what the new owner holds.
//
// CPU per request is lower on the engine's own sockets
// (BenchmarkKeepAlive: one request and answer on a parked connection,
// client included, -count 4 on a busy shared 2-core box: 42-50µs against
// 55-61µs with GoPoller, whose park re-arms a one-shot registration with
// an epoll_ctl; 24-25µs either way on a quieter day, before sockets were
// registered edge-triggered; 2 small allocations in the engine, 3 with
// GoPoller). A new connection costs less
// (BenchmarkConnect: dial, one request, close, client included: about
// 125µs against 160µs) and takes fewer system calls (the same under
// strace -c -f, 2,000 connections with keepalive on): about 8 fewer on
// the server side, no setsockopt (5 with GoPoller: Go sets TCP_NODELAY
// and the keepalive options on each), no getsockname for a listener bound
// to one address, and one epoll registration instead of two (Go's
// poller's and the engine's).
//
// The engine requires Linux; elsewhere Listen returns an error.
package engine
