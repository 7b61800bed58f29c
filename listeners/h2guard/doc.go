// Package h2guard watches the client's side of an HTTP/2 connection in
// front of golang.org/x/net/http2's server and ends the connection
// (GOAWAY, then close) on what x/net lets through. It is a net.Conn
// wrapper, so it sits in front of any transport: h2c after the preface
// sniff, or a *tls.Conn after ALPN (the TLS state stays visible).
//
// # What it checks
//
// Read parses the 9-byte header of every client frame as the server
// reads it (across reads when split); payloads are not copied:
//
//   - A frame longer than the server's SETTINGS_MAX_FRAME_SIZE:
//     FRAME_SIZE_ERROR (x/net enforces this too once MaxReadFrameSize is
//     set; the guard keeps it when it is not).
//   - A header block (HEADERS, then CONTINUATION until END_HEADERS) open
//     longer than ReadHeaderTimeout: ENHANCE_YOUR_CALM. The guard arms
//     the connection's read deadline while a block is open: x/net sets
//     no read deadline after the preface (only with http.Server's
//     ReadTimeout, which edgeway leaves at zero), so the deadline is the
//     guard's alone.
//   - More than MaxContinuations CONTINUATION frames in one block, or a
//     block over twice MaxHeaderBytes: ENHANCE_YOUR_CALM (CVE-2024-27316
//     style floods of empty CONTINUATION frames).
//   - A header list that decodes to more than MaxHeaderBytes (RFC 9113
//     §6.5.2's count), or a string longer: ENHANCE_YOUR_CALM. Set below
//     the server's limit, so that x/net neither ends the connection with
//     COMPRESSION_ERROR nor answers 431 where the application cannot see
//     it; the listener enforces its own, smaller limit with a 431.
//   - More than MaxControlPerSecond SETTINGS, PING, RST_STREAM, PRIORITY,
//     empty DATA and unknown frames in a second: ENHANCE_YOUR_CALM
//     (SETTINGS and PING floods, and rapid reset, CVE-2023-44487, where
//     every stream costs a RST_STREAM; x/net bounds the handler
//     goroutines of reset streams but not the connection). A PING that
//     follows a HEADERS or DATA frame the server sent is not counted:
//     gRPC clients send one per round trip while they receive data (BDP
//     estimation), well past 1000 a second on a fast link, and each is
//     earned by an answer; a flood gets no answer between its PINGs.
//   - Connection-specific header fields (Connection, Keep-Alive,
//     Proxy-Connection, Transfer-Encoding, Upgrade) and TE other than
//     "trailers" (RFC 9113 §8.2.2): PROTOCOL_ERROR on the connection.
//     x/net answers these with a 400 response, where the RFC calls the
//     request malformed (a stream error). The guard decodes every header
//     block with its own HPACK decoder, fed the same blocks in the same
//     order so that its dynamic table mirrors the server's. It cannot
//     answer with RST_STREAM alone: the server would still have to
//     decode the block (dropping it desyncs the server's HPACK table)
//     and would then answer the stream itself. So it ends the
//     connection, which RFC 9113 §5.4.1 allows for any stream error.
//   - A SETTINGS frame that repeats a setting: x/net refuses it as a
//     PROTOCOL_ERROR, where RFC 9113 §6.5.3 has the values processed in
//     order. The guard rewrites the earlier duplicates in place into
//     unknown identifiers, which the server ignores, so the last value
//     wins as the RFC says.
//
// Each violation has a Kind from a fixed set, and Config.Report is told
// of it, so that the listener counts and logs it as a refusal.
//
// On a violation Read returns only the bytes before the offending frame,
// so the server never acts on it. The GOAWAY is written only at a frame
// boundary of the server's own output: Write counts the server's frame
// headers and lengths under a mutex that the injection holds too. When
// the server is mid-frame (its buffered writer flushed part of a frame,
// the rest still in its buffer), Read holds the violation back for up to
// half a second while the server's next Write finishes that frame; the
// guard then writes the GOAWAY and drops the rest. Returned at once, the
// error would end the server before it flushed, and the client would see
// a close without GOAWAY. Only a server that writes nothing more in that
// time (its client stopped reading) is closed without one. After the
// GOAWAY the guard half-closes and drains the client for up to a second
// so that the close does not reset the connection before the client read
// it.
//
// # Cost
//
// Per frame: a few comparisons, no allocation. Per header block: the
// mirror HPACK decode, which allocates the decoded strings like the
// server's own decode (a request's fields are decoded twice), and, as
// x/net reads a frame's header and payload in two reads, one read
// deadline set and cleared. BenchmarkH2Guard in listeners measures
// requests over one h2c connection with and without the guard: on a
// 2-core machine about 47 µs a request either way (within noise, under
// 5%), and the same 75 allocations a request: the client's repeated
// fields come as HPACK table indexes, which the mirror decoder resolves
// without allocating.
package h2guard
