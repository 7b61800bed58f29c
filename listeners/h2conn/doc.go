// Package h2conn is edgeway's own HTTP/2 server (RFC 9113), chosen with
// a listener's `h2_server own`. It serves h2c with prior knowledge and h2
// over TLS, and hands each request to the router as edgeway's own
// request type (internal/httpmsg): the header block is decoded straight
// into the request's field list, with no http.Header map and no
// *http.Request. The tradeoff of this first cut: a connection still holds
// two goroutines (its read loop and its writer) and a read buffer while
// idle; parking an idle connection on the engine's epoll loop is left
// for later.
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
// # Protections
//
// What listeners/h2guard adds in front of x/net is part of the server:
// a header block must end within ReadHeaderTimeout with a bounded number
// of CONTINUATION frames and bytes; SETTINGS, PING, RST_STREAM and
// PRIORITY frames, empty DATA, tiny WINDOW_UPDATEs and unknown frames
// past MaxControlPerSecond end the connection (rapid reset and floods);
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
// the stream.
//
// A connection: open or idle, its read loop and its writer goroutine, a
// read buffer of 16 KiB (more only while a larger frame, up to
// max_frame_size, is read), the HPACK decoder's table (4 KiB at most) and
// the write buffers, which grow with what was queued. A stream buffers at
// most its window of request body.
package h2conn
