package router

import (
	"strings"
	"unsafe"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
)

// bytesString views b as a string without copying; b must not change
// while the string is in use.
//
// Lifetime: it is called only on the exchange's own buffers (x.buf,
// x.xff, x.target, a redirect scratch), which are rewritten by the next
// request that uses the pooled exchange, so a view is valid until this
// exchange's finish. Every consumer is done with it by then, or copies:
// the response writers serialise or copy a header before WriteHead
// returns (httpmsg.ResponseWriter), the HTTP/1.1 upstream client writes
// the head before Do returns, the HTTP/2 upstream client copies the whole
// head (upstream.stringCopier: its HPACK tables outlive the request), and
// the logs format synchronously. Never hand such a string to anything that
// keeps it: a map, a goroutine, an error, a metric label.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// stripForwarded deletes the forwarding headers an untrusted peer sent
// (docs/rules.md §3.1 step 5), before matching sees them. Underscore
// spellings go too, since some backends treat '_' as '-'.
func stripForwarded(h httpmsg.Header) httpmsg.Header {
	out := h[:0]
	for _, f := range h {
		if !isForwardingHeader(f.Name) {
			out = append(out, f)
		}
	}
	clear(h[len(out):])
	return out
}

var forwardingHeaders = []string{
	"forwarded", "x-real-ip", "x-scheme", "x-forwarded-for", "x-forwarded-proto",
	"x-forwarded-host", "x-forwarded-port", "x-forwarded-server", "x-forwarded-uri",
	"x-forwarded-method", "x-forwarded-prefix", "x-forwarded-scheme",
	"x-forwarded-tls-client-cert", "x-forwarded-tls-client-cert-info", "x-forwarded-client-cert",
	"x-request-id",
}

func isForwardingHeader(k string) bool {
	if k == "" || (k[0]|0x20 != 'x' && k[0]|0x20 != 'f') {
		return false
	}
	for _, f := range forwardingHeaders {
		if len(f) == len(k) && equalFoldDash(k, f) {
			return true
		}
	}
	return false
}

// equalFoldDash compares k to the lower-case f ignoring ASCII case and
// treating '_' in k as '-'.
func equalFoldDash(k, f string) bool {
	for i := range len(k) {
		c := k[i]
		if c == '_' {
			c = '-'
		} else if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != f[i] {
			return false
		}
	}
	return true
}

// stripConnectionOptions deletes the headers the client listed in
// Connection before matching sees them (docs/rules.md §3.1 step 5).
// The forwarding headers edgeway manages and the Upgrade header of an
// upgrade stay.
func stripConnectionOptions(h httpmsg.Header) httpmsg.Header {
	for i := 0; i < len(h); i++ {
		if !httpmsg.EqualFold(h[i].Name, "Connection") {
			continue
		}
		for tok := range strings.SplitSeq(h[i].Value, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "" || strings.EqualFold(tok, "upgrade") || strings.EqualFold(tok, "close") ||
				strings.EqualFold(tok, "connection") || isForwardingHeader(tok) {
				continue
			}
			h = h.Del(tok)
		}
	}
	return h
}

// hopByHop reports whether a field is connection-specific (RFC 9110 §7.6.1)
// or framing that the sender of the next hop writes itself.
func hopByHop(name string) bool {
	switch len(name) {
	case 2:
		return httpmsg.EqualFold(name, "TE")
	case 7:
		return httpmsg.EqualFold(name, "Trailer") || httpmsg.EqualFold(name, "Upgrade")
	case 10:
		return httpmsg.EqualFold(name, "Connection") || httpmsg.EqualFold(name, "Keep-Alive")
	case 14:
		return httpmsg.EqualFold(name, "Content-Length")
	case 16:
		return httpmsg.EqualFold(name, "Proxy-Connection")
	case 17:
		return httpmsg.EqualFold(name, "Transfer-Encoding")
	case 18:
		return httpmsg.EqualFold(name, "Proxy-Authenticate")
	case 19:
		return httpmsg.EqualFold(name, "Proxy-Authorization")
	}
	return false
}

// appendEndToEnd appends src's end-to-end fields to dst: hop-by-hop and
// framing fields, the fields named in Connection, and edgeway's
// forwarding headers (set afresh by setForwarded) are left out. An
// upgrade keeps "Connection: Upgrade" and its Upgrade field. TE is
// hop-by-hop (RFC 9110 §10.1.4) and never forwarded, "TE: trailers"
// included: an HTTP/1.1 server takes it for a promise about this
// connection that edgeway did not make (an HTTP/2 upstream transport
// sends its own).
func appendEndToEnd(dst, src httpmsg.Header, request bool) httpmsg.Header {
	conn, upgrade := connectionOf(src), ""
	for _, f := range src {
		if httpmsg.EqualFold(f.Name, "Upgrade") {
			upgrade = f.Value
		}
	}
	for _, f := range src {
		if hopByHop(f.Name) || (request && isOutboundForwarding(f.Name)) || (conn != "" && httpsyntax.ListHas(conn, f.Name)) {
			continue
		}
		dst = append(dst, f)
	}
	if request && upgrade != "" && httpsyntax.ListHas(conn, "upgrade") {
		dst = append(dst, httpmsg.Field{Name: "Connection", Value: "Upgrade"},
			httpmsg.Field{Name: "Upgrade", Value: upgrade})
	}
	return dst
}

// connectionOf joins the Connection fields of h (no allocation for one).
func connectionOf(h httpmsg.Header) string {
	v := ""
	for _, f := range h {
		if httpmsg.EqualFold(f.Name, "Connection") {
			if v == "" {
				v = f.Value
			} else {
				v += "," + f.Value
			}
		}
	}
	return v
}

// isOutboundForwarding names the headers setForwarded writes.
func isOutboundForwarding(k string) bool {
	return httpmsg.EqualFold(k, "X-Forwarded-For") || httpmsg.EqualFold(k, "X-Forwarded-Proto") ||
		httpmsg.EqualFold(k, "X-Forwarded-Host") || httpmsg.EqualFold(k, "Forwarded") ||
		httpmsg.EqualFold(k, requestIDHeader)
}
