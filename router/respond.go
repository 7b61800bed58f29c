package router

import (
	"net/http"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// Answers edgeway writes itself: errors, 404, respond and redirect.

// errorBodies holds "Status Text\n" for every status, built once, so an
// error answer allocates nothing.
var errorBodies = func() map[int][]byte {
	m := make(map[int][]byte)
	for code := 100; code < 600; code++ {
		if t := http.StatusText(code); t != "" {
			m[code] = []byte(t + "\n")
		}
	}
	return m
}()

const textPlain = "text/plain; charset=utf-8"

// plainError answers code with its status text and nothing internal, as
// http.Error does.
func (x *exchange) plainError(code int) { x.writeText(code, errorBodies[code], false) }

func (x *exchange) notFound() { x.writeText(404, x.l.notFound, false) }

// writeText sends an answer edgeway writes itself: a plain-text body and
// nothing internal; close asks an HTTP/1 client's connection to end after
// it (its request body was left unread).
// An error_page for code replaces body and its content type; extra
// fields go with the head.
func (x *exchange) writeText(code int, body []byte, close bool, extra ...httpmsg.Field) {
	ct := textPlain
	if p := x.errorPage(code); p != nil {
		x.pageBuf = p.render(x.pageBuf[:0], code, x.reqID)
		body, ct = x.pageBuf, p.contentType
		defer x.dropPageBuf()
	}
	h := append(x.respHdr[:0],
		httpmsg.Field{Name: "Content-Type", Value: ct},
		httpmsg.Field{Name: "X-Content-Type-Options", Value: "nosniff"})
	if close && x.in.ProtoMajor == 1 {
		h = append(h, httpmsg.Field{Name: "Connection", Value: "close"})
	}
	h = append(h, extra...)
	x.respHdr = h
	if x.w.WriteHead(code, h, int64(len(body))) == nil {
		x.w.Write(body)
	}
}

// maxPageBuf is the largest error-page buffer a pooled exchange keeps.
const maxPageBuf = 64 << 10

// dropPageBuf lets a large page's buffer go once it is written.
func (x *exchange) dropPageBuf() {
	if cap(x.pageBuf) > maxPageBuf {
		x.pageBuf = nil
	}
}

// answer serves a respond or redirect route.
func (x *exchange) answer(a *answer) {
	h := x.respHdr[:0]
	if a.target != nil {
		x.buf = a.location(x.buf[:0], x.reqPath, x.query)
		h = append(h, httpmsg.Field{Name: "Location", Value: bytesString(x.buf)})
		h = applyHeaders(x.corsHeaders(h), x.rt.chain.respHeader)
		x.respHdr = h
		x.w.WriteHead(a.code, h, 0)
		return
	}
	if len(a.body) > 0 {
		h = append(h, httpmsg.Field{Name: "Content-Type", Value: textPlain})
	}
	h = applyHeaders(x.corsHeaders(h), x.rt.chain.respHeader)
	x.respHdr = h
	if x.w.WriteHead(a.code, h, int64(len(a.body))) == nil {
		x.w.Write(a.body)
	}
}
