package health

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/conf"
)

// maxBody is how much of a response body a check reads for Body.
const maxBody = 64 << 10

// HTTP passes when a request gets a status in Expect and, when Body is
// set, a body that contains it. Each check opens its own connection and
// sends `Connection: close`.
type HTTP struct {
	cfg    conf.HealthCheck
	opts   Options
	dialer net.Dialer
}

// NewHTTP returns an HTTP checker for cfg.
func NewHTTP(cfg conf.HealthCheck, o Options) *HTTP { return &HTTP{cfg: cfg, opts: o} }

// Check sends the request to addr and judges the answer.
func (h *HTTP) Check(ctx context.Context, addr string) Result {
	c, err := h.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Result{Reason: "connect: " + errText(err)}
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := writeProxyLocal(c, h.opts.SendProxy); err != nil {
		return Result{Reason: "write: " + errText(err)}
	}
	if h.opts.TLS != nil {
		tc := tls.Client(c, h.opts.TLS(addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			return Result{Reason: "tls: " + errText(err)}
		}
		c = tc
	}
	if h.opts.H2C {
		return h.checkH2C(ctx, c, addr)
	}
	if _, err := io.WriteString(c, h.request(addr)); err != nil {
		return Result{Reason: "write: " + errText(err)}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return Result{Reason: "read: " + errText(err)}
	}
	defer resp.Body.Close()
	return h.judge(resp)
}

// checkH2C sends the check as HTTP/2 with prior knowledge on c, for
// pools whose servers speak only that (gRPC).
func (h *HTTP) checkH2C(ctx context.Context, c net.Conn, addr string) Result {
	cc, err := (&http2.Transport{AllowHTTP: true}).NewClientConn(c)
	if err != nil {
		return Result{Reason: "h2c: " + errText(err)}
	}
	defer cc.Close()
	method, path, host := h.cfg.Method, h.cfg.Path, h.cfg.Host
	if path == "" {
		path = "/"
	}
	if host == "" {
		host = addr
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+host+path, nil)
	if err != nil {
		return Result{Reason: "request: " + err.Error()}
	}
	req.Header.Set("User-Agent", "edgeway-health-check")
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return Result{Reason: "read: " + errText(err)}
	}
	defer resp.Body.Close()
	return h.judge(resp)
}

// writeProxyLocal starts a check's connection with a PROXY protocol
// header of the LOCAL kind (v2) or UNKNOWN (v1), which tells a server that
// expects PROXY headers that the connection is the proxy's own.
func writeProxyLocal(c net.Conn, version string) error {
	var err error
	switch version {
	case "v1":
		_, err = io.WriteString(c, "PROXY UNKNOWN\r\n")
	case "v2":
		_, err = io.WriteString(c, "\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00")
	}
	return err
}

func (h *HTTP) request(addr string) string {
	host := h.cfg.Host
	if host == "" {
		host = addr
	}
	method, path := h.cfg.Method, h.cfg.Path
	if method == "" {
		method = "GET"
	}
	if path == "" {
		path = "/"
	}
	return method + " " + path + " HTTP/1.1\r\nHost: " + host +
		"\r\nUser-Agent: edgeway-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n"
}

func (h *HTTP) judge(resp *http.Response) Result {
	if !h.expected(resp.StatusCode) {
		return Result{Reason: fmt.Sprintf("status %d (expected %s)", resp.StatusCode, h.ranges())}
	}
	if h.cfg.Body != "" && h.cfg.Method != "HEAD" {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		if err != nil {
			return Result{Reason: "reading body: " + errText(err)}
		}
		if !strings.Contains(string(b), h.cfg.Body) {
			return Result{Reason: fmt.Sprintf("status %d, body does not contain %q", resp.StatusCode, h.cfg.Body)}
		}
	}
	return Result{OK: true, Reason: fmt.Sprintf("status %d", resp.StatusCode)}
}

func (h *HTTP) expected(code int) bool {
	if len(h.cfg.Expect) == 0 {
		return code >= 200 && code <= 399
	}
	for _, r := range h.cfg.Expect {
		if code >= r.Lo && code <= r.Hi {
			return true
		}
	}
	return false
}

func (h *HTTP) ranges() string {
	if len(h.cfg.Expect) == 0 {
		return "200-399"
	}
	parts := make([]string, len(h.cfg.Expect))
	for i, r := range h.cfg.Expect {
		parts[i] = fmt.Sprintf("%d-%d", r.Lo, r.Hi)
		if r.Lo == r.Hi {
			parts[i] = fmt.Sprint(r.Lo)
		}
	}
	return strings.Join(parts, " ")
}
