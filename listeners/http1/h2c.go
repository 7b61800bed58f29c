package http1

import (
	"strings"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// stripH2C removes an HTTP/2 cleartext upgrade offer (RFC 7540 §3.2,
// dropped by RFC 9113 §3.1) from h: the Upgrade and HTTP2-Settings fields
// and their Connection options. The request is then served as plain
// HTTP/1.1 (and the connection closed after it, as after any Upgrade
// request). It allocates, once per such request.
func stripH2C(h httpmsg.Header) httpmsg.Header {
	h = h.Del("Upgrade").Del("HTTP2-Settings")
	var keep []string
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Connection") {
			continue
		}
		for opt := range strings.SplitSeq(f.Value, ",") {
			opt = strings.TrimSpace(opt)
			if opt != "" && !strings.EqualFold(opt, "upgrade") && !strings.EqualFold(opt, "http2-settings") {
				keep = append(keep, opt)
			}
		}
	}
	h = h.Del("Connection")
	if len(keep) > 0 {
		h = append(h, httpmsg.Field{Name: "Connection", Value: strings.Join(keep, ", ")})
	}
	return h
}
