package httpmsg

import "testing"

func TestReasonCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"invalid Host": "invalid_host",
		"both Content-Length and Transfer-Encoding": "both_content_length_and_transfer_encoding",
		"HTTP/2 connection preface":                 "http_2_connection_preface",
		"Transfer-Encoding on HTTP/1.0":             "transfer_encoding_on_http_1_0",
		"  head too large ":                         "head_too_large",
		"":                                          "",
	} {
		if got := ReasonCode(in); got != want {
			t.Errorf("ReasonCode(%q) = %q, want %q", in, got, want)
		}
	}
}
