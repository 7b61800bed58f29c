// Package h2conn is edgeway's own HTTP/2 server (RFC 9113), chosen with
// a listener's `h2_server own`. It serves h2c with prior knowledge and h2
// over TLS, and hands each request to the router as edgeway's own
// request type (internal/httpmsg): the header block is decoded straight
// into the request's field list, with no http.Header map and no
// *http.Request. A connection idle for 100ms, over TLS or h2c, is parked
// on the connection engine's epoll loop (ServeEngine, Resume) with no
// goroutine and no buffer; the tradeoff: it holds both for those 100ms,
// so that a client sending one request after another pays no park and
// wake-up (a writer goroutine started again, an engine dispatch) each.
// ServeConn serves a plain net.Conn, never parked.
//
// # Shape
//
// A connection's frames are read and parsed by its read loop (the
// caller of ServeConn) from one buffer, which holds a frame of up to
// SETTINGS_MAX_FRAME_SIZE; frame headers and payloads are parsed here,
// and golang.org/x/net/http2/hpack decodes the header blocks. A stream
// is state in the connection, not a goroutine: a goroutine runs only
// while a stream's handler runs (the router waits on its upstream or its
// body). Every frame is queued in one output buffer that the
// connection's writer sends: all the frames ready when it wakes go in
// one write, never a flush per frame. A small response is one HEADERS
// and one DATA frame queued together.
//
// # Flow control and memory
//
// Each stream may receive 256 KiB of body ahead of its handler's reads,
// the connection 1 MiB in all: WINDOW_UPDATE is sent as the handler
// reads, so a client's body is read only as fast as the upstream takes
// it. A response is sent only as the client's windows allow: a handler
// blocks in Write while its stream or the connection has no window, or
// while 256 KiB of frames wait for the writer, so an upstream body is
// read only as fast as the client takes it. Response header blocks are
// encoded without the HPACK dynamic table (hpackenc.go).
//
// # Parking
//
// ServeEngine runs a connection's read loop on its engine dispatch
// goroutine. When the connection has had no stream and no handler,
// nothing queued or being written, for parkGrace (100ms), and it has no
// header block open and no byte of a frame buffered, the read loop parks
// it: the writer ends (it starts again
// when a frame is queued), the read buffer and the header block state
// go back to a pool (active), and the loop returns engine.Park. What
// stays is the connection's protocol state: the HPACK decoder's dynamic
// table, the client's settings, both flow-control windows, the recently
// reset streams and the control frame count. The engine dispatches the
// connection again when it is readable, and Resume runs the loop again.
// A handler that ends the last stream, the writer that sends the last
// frames, or the read loop that read everything sets the read deadline
// parkGrace ahead (the idle timeout when that is sooner): when it
// passes, the read loop parks the connection if it is still idle.
//
// crypto/tls may hold bytes epoll does not see: a record read ahead with
// an earlier one, or decrypted and not yet returned. Before parking, the
// loop reads with a deadline in the past, which returns only what TLS
// holds, and looks at the socket (MSG_PEEK); either finding bytes keeps
// it reading, as the HTTP/1 server does (listeners/http1).
//
// A parked connection has no goroutine to notice its idle timeout or a
// shutdown. The server keeps its parked connections in park order, and
// one timer, running while any is parked, sends the idle GOAWAY from a
// goroutine of its own to those idle past the timeout less a margin
// (IdleTimeout/16, at most 250ms: the engine closes a connection parked
// for the timeout itself, without a GOAWAY). Shutdown claims every
// parked connection and sends its GOAWAY the same way. Whoever
// claims a parked connection (under the connection's lock) ends it; an
// engine dispatch that finds it claimed returns engine.Detach.
//
// # Protections
//
// What listeners/h2guard adds in front of x/net is part of the server:
// a header block must end within ReadHeaderTimeout with a bounded number
// of CONTINUATION frames and bytes; SETTINGS, PING, RST_STREAM and
// PRIORITY frames, empty DATA, tiny WINDOW_UPDATEs and unknown frames
// past MaxControlPerSecond end the connection (rapid reset and floods;
// each response HEADERS, trailers or DATA frame of 1 KiB or more this
// side queues earns the client one PING or tiny WINDOW_UPDATE that is not
// counted, up to 16 ahead: gRPC clients send both once per round trip
// while data arrives; a tiny DATA frame, which a client can cause with a
// tiny WINDOW_UPDATE, and a refusal earn nothing);
// streams past MaxConcurrentStreams, or handlers of reset streams past
// twice it, are refused; a stream with no window or body progress for
// StallTimeout is reset; content-length must be one number that matches
// the DATA; connection-specific fields, TE other than trailers, bad
// names and values and pseudo-header misuse are stream errors; a bad
// :method or :authority, or a Host that differs from :authority, is
// answered 400; a header list over MaxHeaderBytes is answered 431. Every
// client mistake is reported (Config.Refused) and never reaches an
// upstream. A connection this side ends always gets a GOAWAY first,
// then a short linger so that the client reads it.
//
// # Cost
//
// A request: BenchmarkH2ServerGET in listeners sends GETs on one h2c
// connection to a router that answers them itself. On a busy 2-core box:
// about 24 µs and 3 allocations a request (the stream, the one literal
// the client's HPACK block carries, the router's request ID), against
// x/net's 69 µs and 49 allocations; the client writes fixed frames and
// allocates nothing, so the counts are the server's and the router's.
// The handler runs on a reused worker goroutine (no goroutine start per
// stream), and its head and a small body are encoded into buffers inside
// the stream. Over TLS, one GET after another on one connection
// (BenchmarkH2TLSServerGET/1) costs 5 allocations, as before parking
// came: the connection is not parked between them (parking after each
// answer cost 23 and a few microseconds).
//
// A connection, by state (TestIdleTLSCost in listeners measures it: a
// TLS listener in a child process, 2,500 connections each with a full
// handshake and one GET answered, RSS growth after a GC and
// debug.FreeOSMemory; busy 2-core box, Go 1.26):
//
//   - Parked, over TLS: about 9.9 KB of RSS and no goroutine, against
//     30.1 KB and two goroutines before parking (an HTTP/1.1 connection
//     over TLS: 9.0 KB). All but about 1 KB of it is the engine's (the
//     poll descriptor, net's structures) and crypto/tls's (the tls.Conn,
//     the AES-GCM states both ways, the buffers its handshake grew);
//     this package's part is the conn (512 bytes), the HPACK decoder
//     (160 bytes) and the dynamic table the client filled (up to 4 KiB
//     of fields: a browser's user-agent and cookies; none in the
//     measurement but an :authority). scripts/bench-tls.sh's idle part
//     (RSS 3 s after 3,000 connections opened, no GC forced) gives 12.2
//     KB, against 34.5 KB before, nginx's 15.5 KB and HAProxy's 21.1 KB.
//   - Served (a stream open, or frames being read or written): the above
//     plus the dispatch goroutine that runs the read loop, the writer
//     goroutine, a pooled read buffer of 16 KiB (more only while a
//     larger frame, up to max_frame_size, is read) and the write
//     buffers, which grow with what was queued. A stream buffers at most
//     its window of request body.
//   - h2c: the same less crypto/tls's part, parked or served.
package h2conn
