package httpmsg

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
)

// wsGUID is the value RFC 6455 §1.3 appends to Sec-WebSocket-Key.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// NewWebSocketKey returns a fresh Sec-WebSocket-Key (RFC 6455 §4.1): the
// key an HTTP/2 or HTTP/3 front end sends upstream for an extended
// CONNECT, which carries none.
func NewWebSocketKey() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// WebSocketAccept is the Sec-WebSocket-Accept that answers key.
func WebSocketAccept(key string) string {
	h := sha1.Sum([]byte(key + wsGUID))
	return base64.StdEncoding.EncodeToString(h[:])
}
