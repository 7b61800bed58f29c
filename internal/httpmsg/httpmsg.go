// Package httpmsg is edgeway's own request type and the small handler
// interface between the protocol front ends and the router. The HTTP/1
// engine fills a Request from its pooled read buffer without allocating;
// HTTP/2 (and later HTTP/3) fill one from *http.Request through an adapter.
// The router, its middlewares, the access log and the upstream client use
// only this type, so every protocol takes one path.
//
// The tradeoff: strings in a Request may point into a buffer that the front
// end reuses once the handler returns, so a handler must not keep them (nor
// the Header slice) after ServeProxy returns; copy what must outlive it.
package httpmsg

import (
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Field is one header field. Name is as the client sent it (HTTP/1 keeps
// case; HTTP/2 is lower case); Value has no leading or trailing whitespace.
type Field struct {
	Name, Value string
}

// Header is an ordered list of fields; a name may repeat.
type Header []Field

// Get returns the first value of name (ASCII case-insensitive), or "".
func (h Header) Get(name string) string {
	for i := range h {
		if EqualFold(h[i].Name, name) {
			return h[i].Value
		}
	}
	return ""
}

// Has reports whether name is present.
func (h Header) Has(name string) bool {
	for i := range h {
		if EqualFold(h[i].Name, name) {
			return true
		}
	}
	return false
}

// Del removes every field called name, keeping the order of the rest.
func (h Header) Del(name string) Header {
	out := h[:0]
	for _, f := range h {
		if !EqualFold(f.Name, name) {
			out = append(out, f)
		}
	}
	clear(h[len(out):])
	return out
}

// AppendMap appends the fields of a header map (an http.Header) to h, in
// the map's order: a name's values keep theirs. The strings are shared,
// not copied.
func AppendMap(h Header, m map[string][]string) Header {
	if h == nil && len(m) > 0 {
		h = make(Header, 0, len(m))
	}
	for k, vv := range m {
		for _, v := range vv {
			h = append(h, Field{Name: k, Value: v})
		}
	}
	return h
}

// Set replaces every field called name by one with value.
func (h Header) Set(name, value string) Header {
	return append(h.Del(name), Field{Name: name, Value: value})
}

// EqualFold reports whether a and b are equal under ASCII case folding.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c, d := a[i], b[i]
		if c == d {
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// Request is one request as the router sees it.
type Request struct {
	// Method is the method token as sent (case-sensitive).
	Method string
	// Target is the request-target as received: origin-form ("/p?q"),
	// "*", authority-form (CONNECT) or absolute-form. HTTP/2 fills it
	// from :path.
	Target string
	// Host is the Host header field (HTTP/1) or :authority (HTTP/2); ""
	// when the request had none (HTTP/1.0).
	Host string
	// ProtoMajor and ProtoMinor are the HTTP version: 1.0, 1.1, 2.0, 3.0.
	ProtoMajor, ProtoMinor int
	// Header holds every field but Host, as received, hop-by-hop fields
	// included (the router removes those). The HTTP/1 framing fields
	// (Content-Length, Transfer-Encoding) are present; the router does not
	// forward them: framing is ContentLength and Body.
	Header Header
	// ContentLength is the body length: 0 for none, -1 when unknown
	// (chunked, or HTTP/2 without content-length).
	ContentLength int64
	// Body yields the body bytes, decoded from the transfer framing, then
	// io.EOF. Nil when ContentLength is 0. Reading it may block; an error
	// other than io.EOF means the client's body is broken or too slow.
	Body io.Reader
	// Trailer, when non-nil, returns the request trailers once Body has
	// returned io.EOF (chunked HTTP/1, HTTP/2).
	Trailer func() Header
	// Close is true when the client asked for the connection to be closed
	// after this exchange (Connection: close, or HTTP/1.0 without
	// keep-alive).
	Close bool
	// RemoteAddr is the client's address (the TCP peer); LocalAddr the
	// address it connected to.
	RemoteAddr, LocalAddr netip.AddrPort
	// TLS is true when the request arrived over TLS; TLSVersion is then
	// the negotiated version (tls.VersionTLS13, ...) and ServerName the
	// name the client sent in SNI ("" for none).
	TLS        bool
	TLSVersion uint16
	ServerName string
	// ClientCert is the certificate the client presented and the
	// listener verified (`client_auth`); nil when none.
	ClientCert *x509.Certificate
	// Ctx ends when the client goes away (nil: never, as
	// context.Background).
	Ctx context.Context
}

// Context returns r.Ctx or context.Background.
func (r *Request) Context() context.Context {
	if r.Ctx != nil {
		return r.Ctx
	}
	return context.Background()
}

// Path returns the target's path part (before '?'), or "" for targets
// that have none ("*", authority-form).
func (r *Request) Path() string {
	t := r.Target
	if t == "" || t[0] != '/' {
		if i := indexScheme(t); i > 0 {
			t = t[i:]
			if j := indexByte(t, '/'); j >= 0 {
				t = t[j:]
			} else {
				return "/"
			}
		} else {
			return ""
		}
	}
	if i := indexByte(t, '?'); i >= 0 {
		return t[:i]
	}
	return t
}

// RawQuery returns the target's query, without '?'.
func (r *Request) RawQuery() string {
	if i := indexByte(r.Target, '?'); i >= 0 {
		return r.Target[i+1:]
	}
	return ""
}

// HasQuery reports whether the target has a '?', even with nothing after
// it.
func (r *Request) HasQuery() bool { return indexByte(r.Target, '?') >= 0 }

// indexScheme returns the index after "scheme://" of an absolute-form
// target, or -1.
func indexScheme(t string) int {
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':' && len(t) >= i+3 && t[i+1] == '/' && t[i+2] == '/':
			return i + 3
		default:
			return -1
		}
	}
	return -1
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// ResponseWriter sends one response. Its methods are called from the
// handler's goroutine only.
type ResponseWriter interface {
	// WriteHead sends a status line and header. A 1xx other than 101 may
	// be sent any number of times before the final one; a final status
	// (or 101) exactly once. h must not hold hop-by-hop or framing fields
	// (Connection, Keep-Alive, Transfer-Encoding, Content-Length, ...),
	// except that a 101's h carries the Upgrade field (the writer adds
	// "Connection: Upgrade"), and that "Connection: close" in a final
	// response to an HTTP/1 request asks for the connection to be closed
	// after it. The writer frames the body itself from
	// bodyLen, the number of body
	// bytes that will follow (-1: unknown, streamed). For a HEAD request
	// and for 204 and 304 no body is sent whatever bodyLen says; bodyLen
	// still becomes the Content-Length of a HEAD or 304 answer when >= 0.
	// h may be reused once WriteHead returns.
	WriteHead(status int, h Header, bodyLen int64) error
	// Write sends body bytes. Writes are buffered until Flush or until
	// the buffer fills; the handler's return flushes.
	Write(p []byte) (int, error)
	// Flush sends what is buffered.
	Flush() error
	// WriteTrailer ends a body of unknown length with trailer fields
	// (chunked HTTP/1.1, HTTP/2). Fields the protocol cannot carry are
	// dropped.
	WriteTrailer(h Header) error
	// Abort ends the exchange abnormally after a response was started (an
	// upstream failed mid-body): HTTP/1 closes the connection without
	// finishing the body (no last chunk), HTTP/2 resets the stream. A body
	// with a length that ends short is aborted the same way when the
	// handler returns.
	Abort()
	// SetReadDeadline bounds the handler's reads of the request body (the
	// connection's or the stream's read deadline); a read blocked past it
	// returns an error. The zero time removes the bound.
	SetReadDeadline(t time.Time) error
	// Tunnel is called after WriteHead(101, ...) and turns the exchange
	// into a two-way byte stream between the client and up; pre holds
	// bytes already read from up that belong to the tunnel. The writer
	// owns up from this call on (it closes it), and Tunnel returns at
	// once: the front end carries the bytes (spliced or parked). It
	// reports an error when the client connection cannot be tunneled
	// (HTTP/2); up is closed then.
	Tunnel(up net.Conn, pre []byte) error
}

// Handler serves requests. ServeProxy must not keep req, its strings or w
// after it returns.
type Handler interface {
	ServeProxy(w ResponseWriter, req *Request)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(w ResponseWriter, req *Request)

// ServeProxy calls f(w, req).
func (f HandlerFunc) ServeProxy(w ResponseWriter, req *Request) { f(w, req) }

// Protocol names the request's protocol as the logs and metrics do:
// "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/3", or "HTTP/1" when no request
// line was parsed (ProtoMajor 0).
func (r *Request) Protocol() string {
	switch r.ProtoMajor {
	case 0:
		return "HTTP/1"
	case 2:
		return "HTTP/2"
	case 3:
		return "HTTP/3"
	}
	if r.ProtoMinor == 0 {
		return "HTTP/1.0"
	}
	return "HTTP/1.1"
}

// TunnelEnd is what a front end reports of a tunnel (WebSocket, other
// 101 upgrades, TLS passthrough) when it ends.
type TunnelEnd struct {
	// ToUpstream and ToClient are the bytes carried each way.
	ToUpstream, ToClient int64
	// How is how it ended: TunnelClientClosed or TunnelServerClosed (the
	// side whose end of stream, or reset, came first), or TunnelError (a
	// read or write failed otherwise, a timeout, or a side was closed
	// under it).
	How string
}

// The values of TunnelEnd.How.
const (
	TunnelClientClosed = "client_closed"
	TunnelServerClosed = "server_closed"
	TunnelError        = "error"
)

// TunnelReporter is implemented by an upstream connection that wants to
// follow its tunnel: a front end that carries a tunnel over it calls
// TunnelStarted once the tunnel runs, with a function that ends the
// tunnel (both sides; safe from any goroutine, any number of times), and
// TunnelEnded once, just before it closes the connection.
type TunnelReporter interface {
	TunnelStarted(end func())
	TunnelEnded(TunnelEnd)
}

// TunnelSocket is implemented by an upstream connection that wraps a
// plain TCP socket and adds nothing to its bytes (no TLS, no framing): a
// front end that carries a tunnel over it on its own event loop may take
// the socket over. TunnelSocket hands it over (nil when there is none
// left to hand): the caller owns it from then on and closes it (the
// engine duplicates the descriptor and closes the *net.TCPConn, which
// takes the socket out of Go's poller, then closes the duplicate when the
// tunnel ends). The wrapper forgets the socket; the front end calls only
// its Close, for the wrapper's own bookkeeping, and TunnelReporter's
// methods after that.
type TunnelSocket interface {
	TunnelSocket() *net.TCPConn
}

// Refusal is a request (or, with Status 0, a connection) a listener
// answered itself, before any handler saw it: a head that does not
// parse, is too large, smuggles, names a bad Host or an unsupported
// version; an HTTP/2 or HTTP/3 stream or connection error the client
// caused; a PROXY header or TLS handshake that failed.
type Refusal struct {
	Listener string
	// Protocol is "HTTP/1.0", "HTTP/1.1", "HTTP/2" or "HTTP/3"
	// (Request.Protocol), "HTTP/1" when the request line did not parse,
	// or the stage of a connection refused before HTTP: ProtoProxy or
	// ProtoTLS.
	Protocol string
	// Status is the status answered (400, 414, 431, 505, ...); 0 when
	// none could be: the connection or stream was closed or reset.
	Status int
	// Reason is machine-readable and from a fixed set (an HTTP/1 parser
	// reason through ReasonCode, or one of the Reason constants), so it
	// may label a metric.
	Reason string
	Remote netip.AddrPort
}

// The Protocol of a connection refused before HTTP.
const (
	ProtoProxy = "proxy" // the PROXY protocol stage
	ProtoTLS   = "tls"   // the ClientHello and handshake
)

// Refusal reasons besides the HTTP/1 parser's (internal/http1's reason
// texts through ReasonCode, such as invalid_host or
// both_content_length_and_transfer_encoding). The set is fixed: these
// label edgeway_requests_refused_total.
const (
	// HTTP/2 and HTTP/3 requests (a status is sent).
	ReasonHeadTooLarge         = "request_head_too_large" // 431, as HTTP/1's
	ReasonInvalidHost          = "invalid_host"           // 400, as HTTP/1's
	ReasonInvalidMethod        = "invalid_method"         // 400, as HTTP/1's
	ReasonInvalidContentLength = "invalid_content_length" // 400, as HTTP/1's

	// HTTP/2 stream and connection errors the client caused (RST_STREAM
	// or GOAWAY: no status).
	ReasonMalformedRequest  = "malformed_request"          // invalid fields or pseudo-header fields (PROTOCOL_ERROR)
	ReasonConnectionHeader  = "connection_specific_header" // Connection, Upgrade, TE other than trailers... (RFC 9113 §8.2.2)
	ReasonProtocolError     = "protocol_error"             // frames out of order or malformed
	ReasonFlowControl       = "flow_control_error"         // more data than the window allowed
	ReasonCompressionError  = "compression_error"          // an HPACK block that does not decode
	ReasonFrameTooLarge     = "frame_too_large"            // over SETTINGS_MAX_FRAME_SIZE
	ReasonTooManyStreams    = "too_many_streams"           // over SETTINGS_MAX_CONCURRENT_STREAMS
	ReasonHeaderTimeout     = "header_timeout"             // a header block not finished within read_header_timeout
	ReasonContinuationFlood = "continuation_flood"         // too many CONTINUATION frames
	ReasonControlFrameFlood = "control_frame_flood"        // SETTINGS, PING, RST_STREAM... floods
	ReasonRapidReset        = "rapid_reset"                // streams reset as fast as opened (CVE-2023-44487)

	// Connections refused before HTTP (no status, or the plain-text 400
	// of not_tls).
	ReasonProxyUntrustedPeer = "proxy_untrusted_peer" // a peer outside proxy_protocol trusted
	ReasonProxyHeaderInvalid = "proxy_header_invalid" // a missing, broken or late PROXY header
	ReasonNotTLS             = "not_tls"              // plain text on a TLS port (answered 400)
	ReasonTLSHandshakeFailed = "tls_handshake_failed" // a broken ClientHello, a failed or timed-out handshake
	ReasonNoCommonProtocol   = "no_common_protocol"   // ALPN chose no protocol the listener serves
	ReasonNotHTTP            = "not_http"             // neither HTTP/1 nor the HTTP/2 preface, on an h2c port (closed)
)

// ReasonCode turns a parser's reason text ("invalid Host") into a
// Refusal.Reason ("invalid_host"): lower case, each run of other bytes
// one underscore.
func ReasonCode(text string) string {
	b := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b = append(b, c)
		case 'A' <= c && c <= 'Z':
			b = append(b, c+'a'-'A')
		case len(b) > 0 && b[len(b)-1] != '_':
			b = append(b, '_')
		}
	}
	return strings.TrimSuffix(string(b), "_")
}
