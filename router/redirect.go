package router

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Redirects to https: the route middleware `redirect_https [CODE] [PORT]`
// and the listener shortcut `redirect_https [PORT]`. Both send the request
// to the same host, path and query over https; neither reads a config per
// request, and neither allocates once warm.

// httpsRedirect is a compiled redirect_https middleware. Unlike redirect,
// it does not end the chain: a request that arrived over TLS goes on down
// the route.
type httpsRedirect struct {
	code int
	port string // ":8443"; "" for 443
}

// newHTTPSRedirect compiles `redirect_https CODE PORT`; code 0 is 308 and
// port "" is 443.
func newHTTPSRedirect(code int, port string) (*httpsRedirect, error) {
	if code == 0 {
		code = 308
	}
	switch code {
	case 301, 302, 303, 307, 308:
	default:
		return nil, fmt.Errorf("status %d is not a redirect", code)
	}
	p := 443
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid port %q", port)
		}
		p = n
	}
	return &httpsRedirect{code: code, port: portSuffix(p)}, nil
}

// portSuffix is ":PORT" for a URL, or "" for https's own port.
func portSuffix(port int) string {
	if port == 443 || port == 0 {
		return ""
	}
	return ":" + strconv.Itoa(port)
}

// redirectHTTPS answers a request of a route with redirect_https that did
// not arrive over TLS, and reports whether it did; a request over TLS, or
// on a route without redirect_https, is left to the rest of the route.
func (x *exchange) redirectHTTPS() bool {
	h := x.rt.chain.https
	if h == nil || x.in.TLS {
		return false
	}
	loc, ok := appendHTTPSLocation(x.buf[:0], x.in.Host, h.port, x.origPath, x.in.RawQuery())
	if !ok {
		x.plainError(400)
		return true
	}
	x.buf = loc
	hdr := append(x.respHdr[:0], httpmsg.Field{Name: "Location", Value: bytesString(loc)})
	x.respHdr = applyHeaders(hdr, x.rt.chain.respHeader)
	x.w.WriteHead(h.code, x.respHdr, 0)
	return true
}

// appendHTTPSLocation appends https://HOST[PORT]PATH[?QUERY] to buf, the
// host being the request's Host without its port. ok is false when the
// Host is missing or is not a host name or IP address (nothing to redirect
// to, or nothing safe to put in a Location header).
func appendHTTPSLocation(buf []byte, authority, port, path, query string) ([]byte, bool) {
	host, ok := hostOf(authority)
	if !ok {
		return buf, false
	}
	if path == "" { // "OPTIONS *", or an absolute-form target without a path
		path = "/"
	}
	buf = append(buf, "https://"...)
	buf = append(buf, host...)
	buf = append(buf, port...)
	buf = append(buf, path...)
	if query != "" {
		buf = append(buf, '?')
		buf = append(buf, query...)
	}
	return buf, true
}

// hostOf returns the host of a Host field value ("example.com:8080",
// "[::1]:80"), or false when it is empty or not a host name or IP
// literal.
func hostOf(authority string) (string, bool) {
	host, port := authority, ""
	if len(authority) > 0 && authority[0] == '[' {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", false
		}
		host, port = authority[:end+1], authority[end+1:]
		if a, err := netip.ParseAddr(host[1:end]); err != nil || !a.Is6() || a.Zone() != "" {
			return "", false
		}
	} else {
		if i := strings.LastIndexByte(authority, ':'); i >= 0 {
			host, port = authority[:i], authority[i:]
		}
		if !validRegName(host) {
			return "", false
		}
	}
	if port != "" {
		if port[0] != ':' {
			return "", false
		}
		for i := 1; i < len(port); i++ {
			if port[i] < '0' || port[i] > '9' {
				return "", false
			}
		}
	}
	return host, true
}

// validRegName accepts a DNS name or an IPv4 address: letters, digits,
// '-', '_' and '.'; nothing that could end or change a URL's authority.
func validRegName(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c == '-' || c == '_' || c == '.' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z') {
			return false
		}
	}
	return true
}

// RedirectHTTPS returns the handler of a listener with `redirect_https
// [PORT]`: every request is answered 308 with Location
// https://HOST[:PORT]/path?query, HOST being the request's Host without its
// port and PORT left out when it is 443 (port 0 also means 443). Routes
// are not consulted. A request without a usable Host gets 400.
func RedirectHTTPS(port int) httpmsg.Handler {
	return &listenerRedirect{port: portSuffix(port)}
}

type listenerRedirect struct {
	port string
	pool sync.Pool // *redirectScratch
}

// redirectScratch holds one answer's Location and header, reused.
type redirectScratch struct {
	buf []byte
	hdr httpmsg.Header
}

// ServeProxy answers req with the redirect.
func (l *listenerRedirect) ServeProxy(w httpmsg.ResponseWriter, req *httpmsg.Request) {
	s, _ := l.pool.Get().(*redirectScratch)
	if s == nil {
		s = &redirectScratch{buf: make([]byte, 0, 256), hdr: make(httpmsg.Header, 0, 3)}
	}
	loc, ok := appendHTTPSLocation(s.buf[:0], req.Host, l.port, req.Path(), req.RawQuery())
	s.buf = loc
	if ok {
		s.hdr = append(s.hdr[:0], httpmsg.Field{Name: "Location", Value: bytesString(loc)})
		w.WriteHead(308, s.hdr, 0)
	} else {
		body := errorBodies[400]
		s.hdr = append(s.hdr[:0], httpmsg.Field{Name: "Content-Type", Value: textPlain},
			httpmsg.Field{Name: "X-Content-Type-Options", Value: "nosniff"})
		if w.WriteHead(400, s.hdr, int64(len(body))) == nil {
			w.Write(body)
		}
	}
	// Lifetime: Location viewed s.buf; WriteHead serialised or copied it
	// before returning, so the scratch can serve the next request.
	clear(s.hdr)
	if cap(s.buf) <= 8<<10 { // a rare long URL is not kept
		l.pool.Put(s)
	}
}
