package listeners

import (
	"net"
	"strings"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/listeners/h2guard"
)

// HTTP/2 refusals: the stream and connection errors a client causes
// reach Options.Refused from two places. The guard reports the
// violations it ends a connection for (h2guard.Config.Report) and the
// streams x/net resets for a field it refuses without counting them
// (ReportStream); x/net reports its other errors through
// http2.Server.CountError, which h2Front.serve sets per connection.

// reportViolation reports a connection the guard ended.
func (f *h2Front) reportViolation(remote net.Addr, v *h2guard.Violation) {
	f.refused(httpmsg.Refusal{Listener: f.name, Protocol: "HTTP/2", Reason: v.Kind, Remote: addrPort(remote)})
}

// reportStream reports a stream x/net resets for a field it refuses.
func (f *h2Front) reportStream(remote net.Addr, v *h2guard.Violation) {
	f.refused(httpmsg.Refusal{Listener: f.name, Protocol: "HTTP/2", Reason: v.Kind, Remote: addrPort(remote)})
}

// reportCountError reports an error x/net counted, when it is one the
// client caused.
func (f *h2Front) reportCountError(remote net.Addr, errType string) {
	if reason := h2ErrReason(errType); reason != "" {
		f.refused(httpmsg.Refusal{Listener: f.name, Protocol: "HTTP/2", Reason: reason, Remote: addrPort(remote)})
	}
}

// h2ErrReason maps an x/net CountError type to a refusal reason, "" for
// those that are not the client's fault alone. The types are
// "frame_NAME" from the framer (a malformed frame) and
// "conn_CODE_NAME" or "stream_CODE_NAME" from the server, CODE an
// HTTP/2 error code name (PROTOCOL_ERROR, ...). An unknown NAME maps by
// its code, so a newer x/net keeps the label values bounded.
func h2ErrReason(errType string) string {
	if strings.HasPrefix(errType, "frame_") {
		return httpmsg.ReasonProtocolError
	}
	for _, n := range h2ErrNames {
		if strings.HasSuffix(errType, n.suffix) {
			return n.reason
		}
	}
	switch {
	case strings.Contains(errType, "_PROTOCOL_ERROR_"):
		return httpmsg.ReasonProtocolError
	case strings.Contains(errType, "_FLOW_CONTROL_ERROR_"):
		return httpmsg.ReasonFlowControl
	}
	// STREAM_CLOSED (DATA racing a reset), REFUSED_STREAM (the server's
	// own race), and ENHANCE_YOUR_CALM other than early resets.
	return ""
}

// h2ErrNames are the x/net error names whose reason is not their code's.
var h2ErrNames = [...]struct{ suffix, reason string }{
	{"_bad_path_method", httpmsg.ReasonMalformedRequest},
	{"_bad_connect", httpmsg.ReasonMalformedRequest},
	{"_trailers_pseudo", httpmsg.ReasonMalformedRequest},
	{"_trailers_bogus", httpmsg.ReasonMalformedRequest},
	{"_trailers_not_ended", httpmsg.ReasonMalformedRequest},
	{"_PROTOCOL_ERROR_over_max_streams", httpmsg.ReasonTooManyStreams},
	{"_too_many_early_resets", httpmsg.ReasonRapidReset},
}
