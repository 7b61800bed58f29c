package listeners

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/stdhttp"
	"github.com/edgeway/edgeway/listeners/h3"
)

// HTTP/3: a TLS listener whose protocols include h3 gets a QUIC listener
// on the same port number over UDP, serving the same handler through the
// same net/http adapter as HTTP/2; its TCP responses advertise it with
// Alt-Svc.

// ServesH3 reports whether lc serves HTTP/3.
func ServesH3(lc conf.Listener) bool {
	return slices.Contains(lc.Protocols, "tls") && slices.Contains(lc.Protocols, "h3")
}

// ListenQUIC binds lc's QUIC listener, serving h; tc is its TLS
// configuration (certificates, ALPN h3). Its Warnings name socket buffers
// the kernel capped. refused, when set, is told of the requests the
// adapter refuses (Options.Refused).
//
// max_header_bytes is enforced by the adapter, which answers 431 and
// reports it; quic-go gets h2HeaderFactor times more (its
// SETTINGS_MAX_FIELD_SECTION_SIZE too), because past its own limit it
// answers 431 itself and the handler never sees the request. Past that,
// and for the requests quic-go resets as malformed (H3_MESSAGE_ERROR:
// a missing :path, userinfo in :authority, a bad field) or as undecodable
// (QPACK_DECOMPRESSION_FAILED), quic-go v0.65 gives no hook: those are
// not reported.
func ListenQUIC(lc conf.Listener, tc *tls.Config, h httpmsg.Handler, log *slog.Logger, refused func(httpmsg.Refusal)) (*h3.Server, error) {
	q := lc.QUIC
	s, err := h3.Listen(h3.Options{
		Addr: lc.Addr,
		Handler: stdhttp.HandlerWith(h, stdhttp.Options{StallTimeout: lc.H2.StreamStallTimeout,
			MaxHeaderBytes: lc.MaxHeaderBytes, Listener: lc.Name, Refused: refused}),
		TLS:                tc,
		IdleTimeout:        q.IdleTimeout,
		MaxIncomingStreams: int64(q.MaxIncomingStreams),
		StreamWindow:       uint64(q.StreamWindow),
		ConnectionWindow:   uint64(q.ConnectionWindow),
		Allow0RTT:          q.Allow0RTT,
		RecvBuffer:         q.UDPRecvBuffer,
		SendBuffer:         q.UDPSendBuffer,
		MaxConnsPerSource:  q.MaxConnsPerSource,
		MaxHeaderBytes:     h2HeaderFactor * lc.MaxHeaderBytes,
		Log:                log.With("listener", lc.Name),
	})
	if err != nil {
		return nil, fmt.Errorf("quic: %w", err)
	}
	return s, nil
}

// WithAltSvc wraps h, the handler of TCP listener lc, so that its final
// responses advertise HTTP/3 on port (Alt-Svc), unless lc turns that off.
func WithAltSvc(lc conf.Listener, h httpmsg.Handler, port int) httpmsg.Handler {
	if lc.QUIC.AltSvcOff {
		return h
	}
	return &altSvc{next: h, value: altSvcValue(port, int64(lc.QUIC.AltSvcMaxAge.Seconds()))}
}

// altSvcValue is the Alt-Svc field value (RFC 7838): h3=":PORT"; ma=SECONDS.
func altSvcValue(port int, maxAge int64) string {
	return `h3=":` + strconv.Itoa(port) + `"; ma=` + strconv.FormatInt(maxAge, 10)
}

// altSvc adds Alt-Svc to final responses that do not carry one.
type altSvc struct {
	next  httpmsg.Handler
	value string
	pool  sync.Pool // *altSvcWriter
}

type altSvcWriter struct {
	httpmsg.ResponseWriter
	value string
}

func (a *altSvc) ServeProxy(w httpmsg.ResponseWriter, req *httpmsg.Request) {
	aw, _ := a.pool.Get().(*altSvcWriter)
	if aw == nil {
		aw = &altSvcWriter{value: a.value}
	}
	aw.ResponseWriter = w
	a.next.ServeProxy(aw, req)
	// Lifetime: the handler keeps no writer after it returns (httpmsg).
	aw.ResponseWriter = nil
	a.pool.Put(aw)
}

func (w *altSvcWriter) WriteHead(status int, h httpmsg.Header, bodyLen int64) error {
	if status >= 200 && !h.Has("Alt-Svc") {
		h = append(h, httpmsg.Field{Name: "Alt-Svc", Value: w.value})
	}
	return w.ResponseWriter.WriteHead(status, h, bodyLen)
}
