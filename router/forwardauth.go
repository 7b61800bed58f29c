package router

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// forwardAuth is a route's `forward_auth`, compiled at load time.
type forwardAuth struct {
	url    string
	client *http.Client
	copy   []string // canonical names copied from a 2xx into the request
	ttl    time.Duration
	cache  *grantCache[[]httpmsg.Field] // credentials digest -> the fields granted
}

const (
	maxAuthBody  = 64 << 10 // of an auth answer passed to the client
	maxAuthCache = 4096
)

func compileForwardAuth(a *conf.ForwardAuth) *forwardAuth {
	if a == nil {
		return nil
	}
	return &forwardAuth{url: a.URL, copy: a.CopyHeaders, ttl: a.Cache, cache: newGrantCache[[]httpmsg.Field](maxAuthCache),
		client: &http.Client{Timeout: a.Timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// authAnswerFields are what the client gets of a refusing auth answer.
var authAnswerFields = []string{"Content-Type", "Www-Authenticate", "Location", "Set-Cookie", "Retry-After", "Cache-Control"}

// forwardAuthenticate asks the route's auth service about the request.
// It reports whether the request was answered (refused, or the service
// failed: 503).
func (x *exchange) forwardAuthenticate() bool {
	fa := x.rt.fwdAuth
	creds := x.in.Header.Get("Authorization") + "\x00" + x.in.Header.Get("Cookie")
	var key [32]byte
	if fa.ttl > 0 && creds != "\x00" {
		key = sha256.Sum256([]byte(creds))
		if fields, ok := fa.cache.get(key, time.Now()); ok {
			x.authFields = fields
			return false
		}
	}
	req, err := http.NewRequestWithContext(x.in.Context(), http.MethodGet, fa.url, nil)
	if err != nil {
		x.plainError(500)
		return true
	}
	for _, f := range x.in.Header {
		if !hopByHop(f.Name) && !httpmsg.EqualFold(f.Name, "Content-Length") {
			req.Header.Add(f.Name, f.Value)
		}
	}
	proto := "http"
	if x.in.TLS {
		proto = "https"
	}
	req.Header.Set("X-Forwarded-Method", x.in.Method)
	req.Header.Set("X-Forwarded-Proto", proto)
	req.Header.Set("X-Forwarded-Host", x.in.Host)
	req.Header.Set("X-Forwarded-Uri", x.in.Target)
	req.Header.Set("X-Forwarded-For", x.clientIP)
	req.Header.Set(requestIDHeader, x.reqID)
	resp, err := fa.client.Do(req)
	if err != nil {
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "forward auth failed",
			slog.String("route", x.rt.name), slog.String("auth", fa.url), slog.String("error", err.Error()))
		x.plainError(503)
		return true
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAuthBody))
		h := x.respHdr[:0]
		for _, n := range authAnswerFields {
			for _, v := range resp.Header[n] {
				h = append(h, httpmsg.Field{Name: n, Value: v})
			}
		}
		x.respHdr = h
		if x.w.WriteHead(resp.StatusCode, h, int64(len(body))) == nil {
			x.w.Write(body)
		}
		return true
	}
	var fields []httpmsg.Field
	for _, n := range fa.copy {
		for _, v := range resp.Header[n] {
			fields = append(fields, httpmsg.Field{Name: n, Value: v})
		}
	}
	x.authFields = fields
	if fa.ttl > 0 && creds != "\x00" {
		fa.cache.put(key, fields, time.Now().Add(fa.ttl))
	}
	return false
}

// setAuthFields puts the fields the auth service granted in the outbound
// fields h, in place of a client's own copies.
func (x *exchange) setAuthFields(h httpmsg.Header) httpmsg.Header {
	return replaceFields(h, x.authFields, func(name string) bool {
		for _, n := range x.rt.fwdAuth.copy {
			if httpmsg.EqualFold(name, n) {
				return true
			}
		}
		return false
	})
}

// replaceFields drops the fields of h that owned names, then appends
// add: a policy's fields in place of a client's copies.
func replaceFields(h httpmsg.Header, add []httpmsg.Field, owned func(string) bool) httpmsg.Header {
	out := h[:0]
	for _, f := range h {
		if !owned(f.Name) {
			out = append(out, f)
		}
	}
	return append(out, add...)
}
