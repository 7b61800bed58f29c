package router

import (
	"net/http"
	"strings"
)

var (
	protoHTTP  = []string{"http"}
	protoHTTPS = []string{"https"}
)

// setForwarded sets X-Forwarded-For, -Proto, -Host and Forwarded (RFC 7239)
// on the outbound header h. From a trusted peer the incoming values are
// kept: For and Forwarded are appended to, Proto and Host kept when
// present. From any other peer they were already deleted and are replaced.
func (x *exchange) setForwarded(h http.Header, in *http.Request) {
	proto, protoVals := "http", protoHTTP
	if in.TLS != nil {
		proto, protoVals = "https", protoHTTPS
	}
	xff := x.clientIP
	var priorFwd []string
	if x.trusted {
		if prior := in.Header["X-Forwarded-For"]; len(prior) > 0 {
			xff = strings.Join(prior, ", ") + ", " + xff
		}
		priorFwd = in.Header["Forwarded"]
	}
	// One backing array for the three new values: one allocation, each
	// value cap-limited so an append elsewhere copies.
	vals := make([]string, 3)
	if xff != "" {
		vals[0] = xff
		h["X-Forwarded-For"] = vals[0:1:1]
	}
	if v := in.Header["X-Forwarded-Proto"]; x.trusted && len(v) > 0 {
		h["X-Forwarded-Proto"] = v
	} else {
		h["X-Forwarded-Proto"] = protoVals
	}
	if v := in.Header["X-Forwarded-Host"]; x.trusted && len(v) > 0 {
		h["X-Forwarded-Host"] = v
	} else if in.Host != "" {
		vals[1] = in.Host
		h["X-Forwarded-Host"] = vals[1:2:2]
	}
	x.buf = x.buf[:0]
	for _, v := range priorFwd {
		x.buf = append(append(x.buf, v...), ", "...)
	}
	x.buf = appendForwarded(x.buf, x.clientIP, in.Host, proto)
	vals[2] = string(x.buf)
	h["Forwarded"] = vals[2:3:3]
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
		if !isTokenChar(v[i]) {
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

// isTokenChar reports whether c is a tchar (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
