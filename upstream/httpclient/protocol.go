package httpclient

import "github.com/edgeway/edgeway/conf"

// upstreamProtocol is the pool's protocol: "h2c", "h2" or "http1" (""
// is http1).
func upstreamProtocol(cfg conf.Upstream) string { return cfg.Protocol }

// FullDuplex reports whether the servers may answer while the request
// body still streams and expect it to keep flowing (h2c: a gRPC bidi
// stream sends a message, waits for its answer, sends the next). A
// caller must then not hold a body of unknown length back, for instance
// to keep it for a retry: the stream would stall.
func (t *Transport) FullDuplex() bool { return t.h2 != nil }
