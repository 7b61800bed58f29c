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

func TestProtocol(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		major, minor int
		want         string
	}{{0, 0, "HTTP/1"}, {1, 0, "HTTP/1.0"}, {1, 1, "HTTP/1.1"}, {2, 0, "HTTP/2"}, {3, 0, "HTTP/3"}} {
		if got := (&Request{ProtoMajor: tc.major, ProtoMinor: tc.minor}).Protocol(); got != tc.want {
			t.Errorf("%d.%d: %q, want %q", tc.major, tc.minor, got, tc.want)
		}
	}
}
