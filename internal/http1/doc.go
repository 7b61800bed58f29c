// Package http1 reads and writes HTTP/1.1 message heads and chunked
// bodies (RFC 9112) as pure functions over byte slices: the HTTP/1
// server parses requests from its pooled read buffer with ParseRequest
// and Chunked and takes its status and chunk-size lines from
// AppendStatusLine and AppendChunkHeader; the upstream client writes
// with AppendRequestHead and AppendLastChunk and reads with
// ParseResponse. There is no I/O and no goroutine here.
//
// It is strict in RFC 9112's framing rules (both Content-Length and
// Transfer-Encoding, conflicting or signed lengths, a Transfer-Encoding
// other than a final chunked, obs-fold, bare CR, bad chunk framing):
// anything two HTTP parsers could frame differently is refused, so a
// request cannot be smuggled past the proxy. The tradeoff: parsed
// strings share the caller's buffer instead of being copied, so the
// buffer must not change while a Request or Response is in use, and a
// head that arrives in pieces is rescanned from its start on each call
// (bounded by the head limit, 32 KiB by default).
//
// Cost, from the benchmarks on one core of a Xeon server: a typical
// browser request head (13 lines, 539 bytes) takes about 0.9 µs and no
// allocation once req.Header has room for its fields (net/http's
// ReadRequest: 7.4 µs, 24 allocations, 1.9 KB); a 7-field response head
// 0.22 µs; chunked decoding of 64 KiB in 4 KiB chunks 0.75 µs; none
// allocates.
package http1
