package httpmsg

import "testing"

// TestWebSocketAccept: RFC 6455 §1.3's own example, and fresh keys are
// 16 random bytes in base64, never the same twice.
func TestWebSocketAccept(t *testing.T) {
	if got := WebSocketAccept("dGhlIHNhbXBsZSBub25jZQ=="); got != "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" {
		t.Errorf("WebSocketAccept = %q, want RFC 6455's s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", got)
	}
	a, b := NewWebSocketKey(), NewWebSocketKey()
	if len(a) != 24 || a == b {
		t.Errorf("keys %q and %q: want two different 24-character keys", a, b)
	}
}
