package router

import (
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/upstream"
)

// streamsBody reports whether a request body must stream to the pool's
// server as it arrives, never held back to keep for a retry: a body of
// unknown length to a full-duplex (h2c) pool may be a gRPC stream whose
// client waits for an answer before it sends more.
func streamsBody(pool *upstream.Pool, in *httpmsg.Request) bool {
	return in.ContentLength < 0 && pool.FullDuplex()
}
