package router

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/upstream"
)

// relay sends the upstream's response to the client.
func (x *exchange) relay() {
	resp := &x.resp
	// Lifetime: resp.Header views the upstream connection's read buffer
	// until the first body read; WriteHead serialises or copies it first.
	x.respHdr = appendEndToEnd(x.respHdr[:0], resp.Header, false)
	buffered := x.buffersResponse(resp.Header) // respbuf.go
	x.respHdr = x.sticky(applyHeaders(x.corsHeaders(x.respHdr), x.rt.chain.respHeader))
	length, coding := resp.ContentLength, ""
	if p := x.rt.compress; p != nil {
		if resp.Body != nil {
			coding = p.encoding(x.in, resp.Status, resp.Header, length)
		}
		if coding != "" {
			x.respHdr, length = compressedHeader(x.respHdr, coding), -1
		} else if p.compressible(resp.Header) {
			x.respHdr = append(x.respHdr, httpmsg.Field{Name: "Vary", Value: "Accept-Encoding"})
		}
	}
	if err := x.w.WriteHead(resp.Status, x.respHdr, length); err != nil || resp.Body == nil {
		if resp.Body != nil {
			resp.Body.Close()
		}
		return
	}
	stream := resp.ContentLength < 0 || isEventStream(resp.Header)
	var dst io.Writer = &x.w
	var enc encoder
	if coding != "" {
		enc = getEncoder(coding, &x.w)
		dst = enc
	}
	g := x.wd.gen()
	x.wd.arm(g, phaseDownload)
	var err error
	if buffered { // read ahead of the client (respbuf.go)
		err = x.copyBuffered(resp.Body, stream, dst, enc)
	} else {
		err = x.copyBody(resp.Body, stream, dst, enc)
	}
	if enc != nil {
		if err == nil && enc.Close() != nil {
			err = errClientWrite
		}
		putEncoder(coding, enc)
	}
	x.wd.disarm(g, phaseDownload)
	if err != nil {
		resp.Body.Close()
		x.bodyAborted(err)
		return
	}
	// An HTTP/2 server may send trailers after a body of known length;
	// a front end that cannot carry them drops them. They are written
	// before the body is closed: Close gives the upstream connection back
	// to its pool, and the trailer's strings are valid until then.
	if resp.ContentLength < 0 || len(resp.Trailer) > 0 {
		x.w.w.WriteTrailer(resp.Trailer)
	}
	resp.Body.Close()
}

// copyBody copies the response body to the client through dst (the
// client's writer, or enc, a compressor writing to it) with a pooled
// buffer; a stream is flushed after each read. A read error is the
// upstream's; a write error the client's (returned as errClientWrite).
func (x *exchange) copyBody(body io.Reader, stream bool, dst io.Writer, enc encoder) error {
	buf := buffers.Get()
	// Lifetime: the buffer is only read into and written from here; the
	// writers copy or send what they are given before Write returns.
	defer buffers.Put(buf)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			x.wd.touch()
			if _, err := dst.Write(buf[:n]); err != nil {
				return errClientWrite
			}
			if stream {
				if enc != nil && enc.Flush() != nil {
					return errClientWrite
				}
				if err := x.w.w.Flush(); err != nil {
					return errClientWrite
				}
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

var (
	errClientWrite  = errors.New("client write failed")
	errClientIdle   = errors.New("request body idle timeout")
	errUpstreamIdle = errors.New("upstream idle timeout: no response progress, or the request body not taken")
)

// bodyAborted handles a response body that could not be relayed whole:
// the client connection is aborted so it cannot take the truncated body
// for a complete one.
func (x *exchange) bodyAborted(err error) {
	x.w.w.Abort()
	switch {
	case err == errClientWrite || x.in.Context().Err() != nil:
		x.outcome = upstream.Abandoned
	case x.tap != nil && x.tap.exceeded():
		// The body limit cut the upload while the response streamed.
		x.outcome = upstream.Abandoned
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "request body too large",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
			slog.String("server", x.server.Addr), slog.Int64("max_body_bytes", x.tap.limit),
			slog.String("error", "response already started: connection closed"))
	default:
		x.outcome, x.errKind = upstream.Failure, errAborted
		if c := x.cancel.Cause(); c != nil {
			err = c
		}
		x.r.log.LogAttrs(context.Background(), slog.LevelWarn, "upstream response aborted",
			slog.String("route", x.rt.name), slog.String("upstream", x.rt.upstream),
			slog.String("server", x.server.Addr), slog.Any("error", err))
	}
}

// tunnel relays a 101: the response head goes to the client, then the
// front end carries bytes both ways until either side closes.
func (x *exchange) tunnel() {
	resp := &x.resp
	x.respHdr = appendEndToEnd(x.respHdr[:0], resp.Header, false)
	x.respHdr = append(x.respHdr, httpmsg.Field{Name: "Upgrade", Value: resp.Header.Get("Upgrade")})
	x.respHdr = x.sticky(applyHeaders(x.respHdr, x.rt.chain.respHeader))
	if err := x.w.WriteHead(101, x.respHdr, 0); err != nil {
		resp.Conn.Close()
		x.outcome = upstream.Abandoned
		return
	}
	kind := kindUpgrade
	if httpmsg.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		kind = kindWebSocket
	}
	up := x.r.track(resp.Conn, tunnelKey{x.rt.name, x.rt.upstream, x.server.Addr},
		tunnelInfo{kind: kind, listener: x.l.name, client: x.in.RemoteAddr, reqID: x.reqID, start: time.Now()})
	if err := x.w.w.Tunnel(up, resp.Pre); err != nil {
		x.outcome = upstream.Abandoned
		x.r.log.LogAttrs(context.Background(), slog.LevelDebug, "tunnel refused",
			slog.String("route", x.rt.name), slog.Any("error", err))
	}
}

// sticky adds the affinity cookie of a sticky pool when the request did
// not carry a valid pin to the server that answered.
func (x *exchange) sticky(h httpmsg.Header) httpmsg.Header {
	if c := x.rt.pool.StickyCookie(x.in, x.server); c != "" {
		h = append(h, httpmsg.Field{Name: "Set-Cookie", Value: c})
	}
	return x.splitCookieHeader(h)
}

func isEventStream(h httpmsg.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= 17 && httpmsg.EqualFold(ct[:17], "text/event-stream")
}

// bufferPool lends 32 KiB copy buffers. Pointers to arrays go into the
// sync.Pool so that Put does not allocate.
type bufferPool struct{ p sync.Pool }

const bufSize = 32 << 10

var buffers = &bufferPool{}

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[bufSize]byte); ok {
		return v[:]
	}
	return new([bufSize]byte)[:]
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) >= bufSize {
		b.p.Put((*[bufSize]byte)(buf[:bufSize]))
	}
}
