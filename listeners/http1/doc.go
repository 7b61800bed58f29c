// Package http1 is the HTTP/1.0 and HTTP/1.1 server of edgeway's
// cleartext listener: it runs on the connection engine
// (listeners/engine), parses request heads in place with internal/http1
// and hands edgeway's own request type to the router; a connection that
// opens with the HTTP/2 preface is handed to an h2c server. The tradeoff:
// request strings point into a pooled buffer that is reused once the
// handler returns, so nothing allocates per request, but a handler must
// copy what it keeps (as httpmsg says).
//
// What a connection costs here, by state:
//
//   - Parked (idle keep-alive, between requests): nothing. A Serve call
//     returns engine.Park only when no byte of a next request is
//     buffered, and gives every buffer back first.
//   - Active (in Serve): the engine's goroutine plus one pooled exchange:
//     a 4 KiB read buffer, a 4 KiB write buffer and the request's field
//     array. A head larger than 4 KiB moves to a pooled buffer of
//     MaxHeaderBytes+4 KiB.
//   - Tunnel (after a 101 or a 2xx to CONNECT): nothing here; the engine
//     carries the bytes.
//   - h2c: edgeway's own HTTP/2 server (Config.H2CEngine) runs the
//     connection on the dispatch goroutine and parks it while idle
//     (listeners/h2conn says what it costs); x/net/http2 (Config.H2C)
//     holds its goroutines and buffers.
//
// Per request, the server itself allocates nothing for a typical GET or
// a small chunked POST (BenchmarkGet, BenchmarkPostChunked: 0 allocs/op,
// the handler answering a fixed body). A few rare paths allocate: a 101
// tunnel (copies of the bytes already read), an h2c upgrade offer that is
// refused (the Connection field is rewritten), a request head that
// grows past the read buffer mid-body, and the Date value once a second.
//
// Behaviour kept from the net/http listener it replaces: refused framing
// (internal/http1's rules) is answered 400 (431 for a head too large, 505
// for a version other than 1.x) with "Connection: close" and a lingering
// close; a client too slow to send a head (ReadHeaderTimeout) is cut off
// without an answer; pipelined requests are answered in order; a body the
// handler left unread is drained (up to 256 KiB) to keep the connection;
// "Expect: 100-continue" is answered when the handler first reads the
// body; an Upgrade or CONNECT request not answered by a tunnel, and an
// "Upgrade: h2c" offer (served as plain HTTP/1.1, RFC 9113 §3.1), close the
// connection after the response. A handler that writes nothing gets an
// empty 200, as with net/http; a handler that panics is logged and its
// connection closed (reset if its response had begun).
package http1
