package listeners

import (
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// TestH2ErrReason: x/net's CountError types (server.go and frame.go of
// golang.org/x/net/http2) map to the fixed reasons; the server's own
// races map to none.
func TestH2ErrReason(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"stream_PROTOCOL_ERROR_bad_path_method":        httpmsg.ReasonMalformedRequest,
		"stream_PROTOCOL_ERROR_trailers_pseudo":        httpmsg.ReasonMalformedRequest,
		"conn_PROTOCOL_ERROR_headers_even":             httpmsg.ReasonProtocolError,
		"frame_headers_zero_stream":                    httpmsg.ReasonProtocolError,
		"stream_FLOW_CONTROL_ERROR_data_flow":          httpmsg.ReasonFlowControl,
		"conn_FLOW_CONTROL_ERROR_setting_win_size":     httpmsg.ReasonFlowControl,
		"stream_PROTOCOL_ERROR_over_max_streams":       httpmsg.ReasonTooManyStreams,
		"conn_ENHANCE_YOUR_CALM_too_many_early_resets": httpmsg.ReasonRapidReset,
		"stream_REFUSED_STREAM_over_max_streams_race":  "",
		"stream_STREAM_CLOSED_closed":                  "",
		"something_new":                                "",
	} {
		if got := h2ErrReason(in); got != want {
			t.Errorf("h2ErrReason(%q) = %q, want %q", in, got, want)
		}
	}
}
