package router

import (
	"strings"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/routes/rule"
)

var (
	protoHTTP  = []string{"http"}
	protoHTTPS = []string{"https"}
)

// setForwarded appends X-Forwarded-For, -Proto, -Host and Forwarded (RFC
// 7239) to the outbound fields h. From a trusted peer the incoming values
// are kept: For and Forwarded are appended to, Proto and Host kept when
// present. From any other peer they were already deleted and are replaced.
// The values are built in the exchange's buffers: no allocation.
func (x *exchange) setForwarded(h httpmsg.Header) httpmsg.Header {
	in := x.in
	proto := "http"
	if in.TLS {
		proto = "https"
	}
	x.xff = x.xff[:0]
	x.buf = x.buf[:0]
	for _, f := range in.Header {
		switch {
		case !x.trusted:
		case httpmsg.EqualFold(f.Name, "X-Forwarded-For"):
			x.xff = append(append(x.xff, f.Value...), ", "...)
		case httpmsg.EqualFold(f.Name, "Forwarded"):
			x.buf = append(append(x.buf, f.Value...), ", "...)
		}
	}
	if x.clientIP != "" {
		x.xff = append(x.xff, x.clientIP...)
	} else if n := len(x.xff); n > 0 {
		x.xff = x.xff[:n-2]
	}
	if len(x.xff) > 0 {
		h = append(h, httpmsg.Field{Name: "X-Forwarded-For", Value: bytesString(x.xff)})
	}
	if v := in.Header.Get("X-Forwarded-Proto"); x.trusted && v != "" {
		h = append(h, httpmsg.Field{Name: "X-Forwarded-Proto", Value: v})
	} else {
		h = append(h, httpmsg.Field{Name: "X-Forwarded-Proto", Value: proto})
	}
	if v := in.Header.Get("X-Forwarded-Host"); x.trusted && v != "" {
		h = append(h, httpmsg.Field{Name: "X-Forwarded-Host", Value: v})
	} else if in.Host != "" {
		h = append(h, httpmsg.Field{Name: "X-Forwarded-Host", Value: in.Host})
	}
	x.buf = appendForwarded(x.buf, x.clientIP, in.Host, proto)
	h = append(h, httpmsg.Field{Name: requestIDHeader, Value: x.reqID})
	if in.ClientCert != nil {
		h = append(h, httpmsg.Field{Name: clientCertHeader, Value: x.clientCertValue(in.ClientCert)})
	}
	return append(h, httpmsg.Field{Name: "Forwarded", Value: bytesString(x.buf)})
}

// appendForwarded appends one RFC 7239 forwarded-element. An IPv6 node is
// bracketed and quoted (§6); a host that is not a token (it has a port) is
// quoted.
func appendForwarded(b []byte, ip, host, proto string) []byte {
	if ip != "" {
		b = append(b, "for="...)
		if strings.IndexByte(ip, ':') >= 0 {
			b = append(append(append(b, `"[`...), ip...), `]"`...)
		} else {
			b = append(b, ip...)
		}
		b = append(b, ';')
	}
	if host != "" {
		b = append(b, "host="...)
		b = appendTokenOrQuoted(b, host)
		b = append(b, ';')
	}
	return append(append(b, "proto="...), proto...)
}

func appendTokenOrQuoted(b []byte, v string) []byte {
	token := true
	for i := range len(v) {
		if !httpsyntax.IsTokenChar(v[i]) {
			token = false
			break
		}
	}
	if token {
		return append(b, v...)
	}
	b = append(b, '"')
	for i := range len(v) {
		if v[i] == '"' || v[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, v[i])
	}
	return append(b, '"')
}

// matchHeader is the request header as rules see it (docs/rules.md
// §3.1 step 5): edgeway fills in its own X-Forwarded-Proto and X-Real-Ip
// before matching, so Header(`X-Forwarded-Proto`, ...) sees edgeway's value
// unless a trusted peer supplied one. It lives in the pooled exchange and
// its slices are precomputed or point into the exchange, so building it
// does not allocate.
type matchHeader struct {
	h      rule.HeaderGetter
	proto  []string // edgeway's X-Forwarded-Proto; nil: the client's counts
	realIP []string // edgeway's X-Real-Ip; nil: the client's counts
	// hide drops the forwarding headers an untrusted peer sent, for a header
	// map nobody stripped (MatchHTTP); the router deletes them instead.
	hide bool
}

// newMatchHeader returns h as matchers see it. realIP is the peer address
// as a one-element slice, or nil when unknown.
func newMatchHeader(h rule.HeaderGetter, trusted, tls bool, realIP []string) matchHeader {
	m := matchHeader{h: h}
	if !trusted || len(m.client("X-Forwarded-Proto")) == 0 {
		m.proto = protoHTTP
		if tls {
			m.proto = protoHTTPS
		}
	}
	if !trusted || len(m.client("X-Real-Ip")) == 0 {
		m.realIP = realIP
	}
	return m
}

// Values implements rule.HeaderGetter; name is canonical.
func (m *matchHeader) Values(name string) []string {
	switch {
	case name == "X-Forwarded-Proto" && m.proto != nil:
		return m.proto
	case name == "X-Real-Ip" && m.realIP != nil:
		return m.realIP
	case m.hide && isForwardingHeader(name):
		return nil
	}
	return m.client(name)
}

// client returns the values the client sent.
func (m *matchHeader) client(name string) []string {
	if m.h == nil {
		return nil
	}
	return m.h.Values(name)
}
