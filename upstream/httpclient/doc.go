// Package httpclient is the client edgeway's pools use to talk to one
// upstream server: HTTP/1.1 with keep-alive pools per server, h2c/h2,
// PROXY protocol to the server, cancel and timeouts. A Transport is built
// from one conf.Upstream; Do sends a Request to a server's address and
// fills a Response, and its failures are typed (*Error with a Kind,
// *RequestError, *BodyError, *LimitError) so that the pools and the
// router can tell the server's fault from the client's. Which server to
// ask, and what a failure says about it, is package upstream's job.
//
// The tradeoff: the HTTP/1.1 client is purpose-built rather than
// http.Transport, so that an exchange runs on the caller's goroutine (one
// more only while a request body streams) and an idle connection holds
// neither a goroutine nor a buffer, only its socket; the price is a
// stale keep-alive connection noticed by a peek at checkout (or one retry
// of an idempotent request) instead of by a background reader. h2c costs
// what golang.org/x/net/http2 costs (a read goroutine per connection, a
// goroutine and header maps per request), less its flushes: x/net writes
// each frame with a flush of its own, and a coalescedConn under it sends
// what the connection's streams wrote meanwhile in one write(2), from one
// writer goroutine per connection (h2write.go; a gRPC unary call's three
// upstream writes became about one, make bench-grpc). Through RoundTrip, the net/http adapter that
// copies heads into maps, a GET costs about half the allocations of
// http.Transport (18 against 39): BenchmarkRoundTrip.
package httpclient
