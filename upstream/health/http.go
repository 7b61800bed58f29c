package health

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/edgeway/edgeway/conf"
)

// maxBody is how much of a response body a check reads for Body.
const maxBody = 64 << 10

// HTTP passes when a request gets a status in Expect and, when Body is
// set, a body that contains it. Each check opens its own connection and
// sends `Connection: close`.
type HTTP struct {
	cfg    conf.HealthCheck
	dialer net.Dialer
}

// NewHTTP returns an HTTP checker for cfg.
func NewHTTP(cfg conf.HealthCheck) *HTTP { return &HTTP{cfg: cfg} }

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
