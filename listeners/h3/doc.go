// Package h3 serves HTTP/3 (RFC 9114) over QUIC beside a TCP listener
// that serves HTTP/1.1 and HTTP/2 with the same handler and certificates.
// The HTTP/3 framing, QPACK and request handling are quic-go's http3
// package; this package owns the accept side in front of it and the
// request gate behind it. Requests reach the handler as *http.Request, so
// the front end is the same net/http adapter as HTTP/2's (stdhttp):
// rules, middlewares and the access log see the same request either way.
//
// The accept side leans on quic-go for abuse handling: it caps
// amplification at three times the bytes received from an unvalidated
// address (RFC 9000 §8.1); this package asks for Retry (address
// validation) while many handshakes are in flight, limits connections
// per source address and counts connections and handshakes (Stats). The
// gate answers unsafe requests in 0-RTT data with 425 (RFC 8470) and
// gives a request without a body ContentLength 0, as HTTP/2 does.
// Shutdown is http3.Server's: GOAWAY, requests in flight finish, then
// CONNECTION_CLOSE when the grace ends.
//
// A connection holds quic-go's state (a few tens of KiB with its
// buffers), http3's QPACK decoder and goroutines for its uni streams,
// plus one goroutine per open request stream. A request costs what
// http3.Server costs: BenchmarkRequest measures a GET at about 40 µs,
// 12.7 KB and 195 allocations with quic-go's client included (2 cores);
// scripts/bench-h3.sh compares the proxy's CPU per request over HTTP/3
// with HTTP/2 over TLS.
package h3
