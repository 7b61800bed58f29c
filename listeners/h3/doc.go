// Package h3 serves HTTP/3 (RFC 9114) over QUIC with quic-go, beside a
// TCP listener that serves HTTP/1.1 and HTTP/2 with the same handler and
// certificates. Requests reach the handler as *http.Request, so the
// front end is the same net/http adapter as HTTP/2's (stdhttp): rules,
// middlewares and the access log see the same request either way.
//
// The HTTP/3 framing and QPACK are this package's own and small: QPACK
// runs without a dynamic table (SETTINGS_QPACK_MAX_TABLE_CAPACITY 0), which
// costs header bytes and saves the encoder and decoder streams' state.
// Transport is the matching client, for tests and the load generator.
//
// Abuse handling leans on quic-go: it caps amplification at three times
// the bytes received from an unvalidated address (RFC 9000 §8.1); this
// package asks for Retry (address validation) while many handshakes are
// in flight, and limits connections per source address. A connection in
// flight holds quic-go's state (a few tens of KiB with its buffers) plus
// one goroutine per connection and one per open request stream.
package h3
