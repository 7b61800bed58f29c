package router

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/tracing"
)

// Tracing (Options.Tracer): edgeway is one hop of a W3C trace. The
// client's traceparent, when valid, is the parent of edgeway's server
// span; the upstream gets a new traceparent naming edgeway's span as its
// parent (a new span-id per hop), and the client's tracestate. An
// invalid or missing traceparent starts a new trace, and its tracestate
// is dropped (W3C Trace Context §3.3.1). Retries go out under the same
// span: edgeway makes no client span per try (edgeway.tries counts them).
// With tracing off none of this runs and both fields pass through as any
// other.

const (
	traceparentHeader = "traceparent"
	tracestateHeader  = "tracestate"
)

// traceState is a request's place in its trace. The zero value is
// tracing off.
type traceState struct {
	on       bool                // tracing is on: the upstream gets hop's traceparent
	parentOK bool                // the client's traceparent was valid: its tracestate goes on
	hop      tracing.SpanContext // edgeway's span: trace-id, span-id, sampled flag
	span     trace.Span          // the SDK span; nil when not sampled
	hdr      [tracing.TraceparentLen]byte
}

// startTrace decides the request's trace and, when it is sampled, starts
// its span. Not sampled, it allocates nothing.
func (x *exchange) startTrace() {
	t := x.r.tracer
	parent, ok := incomingParent(x.in.Header)
	x.tc.on, x.tc.parentOK = true, ok
	x.tc.hop = t.Decide(parent, ok, x.trusted)
	if !x.tc.hop.Sampled() {
		return
	}
	state := ""
	if ok {
		// A copy: the span keeps it past the request (export is batched),
		// and a single field's value views the front end's buffer.
		state = strings.Clone(joinValues(x.in.Header, tracestateHeader))
	}
	method, other := spanMethod(x.in.Method)
	name := method
	if other {
		name = "HTTP"
	}
	x.tc.hop, x.tc.span = t.Start(x.tc.hop, parent, ok, state, x.start, name, x.spanAttrs(method, other)...)
}

// incomingParent parses the client's traceparent; more than one field is
// invalid (their values would join into no valid one).
func incomingParent(h httpmsg.Header) (tracing.SpanContext, bool) {
	v, n := "", 0
	for _, f := range h {
		if httpmsg.EqualFold(f.Name, traceparentHeader) {
			v, n = f.Value, n+1
		}
	}
	if n != 1 {
		return tracing.SpanContext{}, false
	}
	return tracing.ParseTraceparent(v)
}

// setTraceparent replaces the client's traceparent in the outbound
// fields h with edgeway's, and drops the client's tracestate when its
// traceparent was not valid. The value is a view of the exchange's
// buffer (bytesString's rule).
func (x *exchange) setTraceparent(h httpmsg.Header) httpmsg.Header {
	out := h[:0]
	for _, f := range h {
		if httpmsg.EqualFold(f.Name, traceparentHeader) || (!x.tc.parentOK && httpmsg.EqualFold(f.Name, tracestateHeader)) {
			continue
		}
		out = append(out, f)
	}
	clear(h[len(out):])
	v := tracing.AppendTraceparent(x.tc.hdr[:0], x.tc.hop)
	return append(out, httpmsg.Field{Name: traceparentHeader, Value: bytesString(v)})
}

// spanAttrs are the server span's attributes known at its start, after
// OpenTelemetry's HTTP semantic conventions. The span outlives the
// request (it is exported later), so every string that views the
// request is copied.
func (x *exchange) spanAttrs(method string, other bool) []attribute.KeyValue {
	in := x.in
	scheme := "http"
	if in.TLS {
		scheme = "https"
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs,
		attribute.String("http.request.method", method),
		attribute.String("url.scheme", scheme),
		attribute.String("url.path", strings.Clone(in.Path())),
		attribute.String("network.protocol.version", protocolVersion(in)),
		attribute.String("edgeway.listener", x.l.name),
		attribute.String("edgeway.request_id", x.reqID), // already a heap string
	)
	if other {
		attrs = append(attrs, attribute.String("http.request.method_original", strings.Clone(in.Method)))
	}
	if host, port := splitHostPort(in.Host); host != "" {
		attrs = append(attrs, attribute.String("server.address", strings.Clone(host)))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	if x.clientIP != "" {
		attrs = append(attrs, attribute.String("client.address", strings.Clone(x.clientIP)))
	}
	if ua := in.Header.Get("User-Agent"); ua != "" {
		attrs = append(attrs, attribute.String("user_agent.original", strings.Clone(ua)))
	}
	return attrs
}

// endSpan adds what the request's end knows (status, route, upstream,
// server, tries) and ends the span. A 5xx is an error (a server span's
// rule: 4xx is the client's).
func (x *exchange) endSpan() {
	s := x.tc.span
	status := x.logStatus()
	attrs := make([]attribute.KeyValue, 0, 6)
	if status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	if x.rt != nil {
		attrs = append(attrs, attribute.String("edgeway.route", x.rt.name))
		if x.rt.upstream != "" {
			attrs = append(attrs, attribute.String("edgeway.upstream", x.rt.upstream))
		}
	}
	if x.server != nil {
		attrs = append(attrs, attribute.String("edgeway.server", x.server.Addr))
	}
	if n := len(x.tried); n > 0 {
		attrs = append(attrs, attribute.Int("edgeway.tries", n))
		if n > 1 {
			attrs = append(attrs, attribute.Int("http.request.resend_count", n-1))
		}
	}
	if status >= 500 {
		attrs = append(attrs, attribute.String("error.type", strconv.Itoa(status)))
		s.SetStatus(codes.Error, "")
	}
	s.SetAttributes(attrs...)
	s.End()
}

// spanMethod is the http.request.method value: a known method as is, any
// other "_OTHER" (other true), as the conventions ask.
func spanMethod(m string) (string, bool) {
	for _, k := range knownMethods {
		if m == k {
			return k, false
		}
	}
	return "_OTHER", true
}

var knownMethods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// protocolVersion is network.protocol.version: "1.0", "1.1", "2", "3".
func protocolVersion(r *httpmsg.Request) string {
	switch r.ProtoMajor {
	case 2:
		return "2"
	case 3:
		return "3"
	}
	if r.ProtoMinor == 0 {
		return "1.0"
	}
	return "1.1"
}

// splitHostPort splits a Host value into host (brackets of an IPv6
// literal removed) and port ("" when none).
func splitHostPort(h string) (host, port string) {
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return "", ""
		}
		host, rest := h[1:end], h[end+1:]
		if p, ok := strings.CutPrefix(rest, ":"); ok {
			return host, p
		}
		return host, ""
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h[:i], ':') < 0 {
		return h[:i], h[i+1:]
	}
	return h, ""
}

// joinValues joins the values of the fields called name with commas
// (RFC 9110 §5.3); one field's value is returned as is.
func joinValues(h httpmsg.Header, name string) string {
	v, n := "", 0
	for _, f := range h {
		if httpmsg.EqualFold(f.Name, name) {
			if n == 0 {
				v = f.Value
			} else {
				v += "," + f.Value
			}
			n++
		}
	}
	return v
}
