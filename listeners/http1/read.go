package http1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/edgeway/edgeway/internal/http1"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/listeners/engine"
)

// step is where reading a head stands.
type step int

const (
	needMore step = iota // no complete head buffered yet
	gotHead              // x.req and x.f hold a head
	leave                // the connection leaves Serve with an action
)

// errHeadTooLarge ends reading when the buffer cannot grow.
var errHeadTooLarge = errors.New("request head too large")

// readHead reads until a whole head is buffered and parses it into x.req.
// The read-header timeout runs from the head's first byte: it is set only
// when the buffered bytes do not hold the whole head, so the usual request,
// which arrives in one read, sets no timer. A client
// that stops or goes away before the end of a head is cut off without an
// answer, as Go's server does. first is true for the first request of a
// Serve call, the only place an HTTP/2 preface is looked for.
func (x *exchange) readHead(first bool) (engine.Action, bool) {
	for {
		if x.r < x.w {
			switch st, act := x.parseHead(first); st {
			case gotHead:
				return 0, true
			case leave:
				return act, false
			}
		}
		if !x.dl.Load() {
			x.headBy = time.Now().Add(x.s.readHeaderTimeout())
			x.setDeadline(x.headBy)
		}
		if x.r < x.w {
			// A head begun and not ended: rather than wait in a read
			// (a goroutine and this exchange for as long as the client
			// takes), the connection parks with what came (holdHead).
			n, err := x.tryFill()
			switch {
			case n > 0:
				continue
			case errors.Is(err, errHeadTooLarge):
				return x.refuse(http.StatusRequestHeaderFieldsTooLarge, "head too large"), false
			case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
				return x.holdHead(), false
			case errors.Is(err, errReadable):
				// TLS with record bytes on the socket: wait for them
			default:
				return engine.Close, false
			}
		}
		if err := x.fill(); err != nil {
			if errors.Is(err, errHeadTooLarge) {
				return x.refuse(http.StatusRequestHeaderFieldsTooLarge, "head too large"), false
			}
			return engine.Close, false
		}
	}
}

// holdHead parks the connection with the head begun in the buffer: the
// engine keeps a copy of those bytes (Conn.Hold) and closes the
// connection at the head's deadline; restoreHead puts them back at the
// next dispatch. Only the buffered head is kept: a slowloris costs the
// parked connection and its bytes, no goroutine and no buffer.
func (x *exchange) holdHead() engine.Action {
	x.c.Hold(x.buf[x.r:x.w], x.headBy)
	x.r, x.w = 0, 0
	x.clearDeadline()
	return engine.Park
}

// restoreHead puts back what holdHead kept, with its deadline, and
// reports whether there was anything.
func (x *exchange) restoreHead() bool {
	b, by, ok := x.c.Held()
	if !ok {
		return false
	}
	if len(b) >= len(x.buf) {
		x.buf = x.s.getBig() // holdHead kept less than a full buffer of bigSize
	}
	x.w = copy(x.buf, b)
	x.headBy = by
	x.setDeadline(by)
	return true
}

// room makes room in the buffer for a read: it moves unread bytes to the
// front, or grows the buffer up to the head limit.
func (x *exchange) room() error {
	if x.w < len(x.buf) {
		return nil
	}
	switch {
	case x.r > 0:
		x.w = copy(x.buf, x.buf[x.r:x.w])
		x.r = 0
	case len(x.buf) < x.s.bigSize:
		big := x.s.getBig()
		x.w = copy(big, x.buf[x.r:x.w])
		x.buf = big
	default:
		return errHeadTooLarge
	}
	return nil
}

// errReadable: over TLS, no decrypted byte is buffered but the socket
// has some (a record may be arriving in parts): a read may wait.
var errReadable = errors.New("http1: the socket has bytes to read")

// tryFill is fill with a read that does not wait: EAGAIN when the
// socket has nothing. Over TLS it takes what crypto/tls holds, and
// reports errReadable when that is nothing but the socket has bytes;
// the head's deadline stays set.
func (x *exchange) tryFill() (int, error) {
	if err := x.room(); err != nil {
		return 0, err
	}
	if x.tls {
		x.c.SetReadDeadline(longAgo)
		n, err := x.c.Read(x.buf[x.w:])
		x.c.SetReadDeadline(x.headBy)
		x.w += n
		switch {
		case n > 0:
			return n, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return 0, err
		case x.socketReadable():
			return 0, errReadable
		}
		return 0, syscall.EAGAIN
	}
	n, err := x.c.TryRead(x.buf[x.w:])
	x.w += n
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

// parseHead looks at the buffered bytes: an HTTP/2 preface, a complete
// head, a refused one, or not enough yet.
func (x *exchange) parseHead(first bool) (step, engine.Action) {
	b := x.buf[x.r:x.w]
	if first && (x.s.cfg.H2C != nil || x.s.cfg.H2CEngine != nil) {
		n := min(len(b), len(http1.Preface))
		if string(b[:n]) == http1.Preface[:n] {
			if n < len(http1.Preface) {
				return needMore, 0 // a partial preface: wait for the rest
			}
			return leave, x.handOver()
		}
	}
	// ParseRequest sets the version only once the request line parses:
	// a refusal must not report the previous request's on the connection.
	x.req.ProtoMajor, x.req.ProtoMinor = 0, 0
	n, f, err := http1.ParseRequest(b, &x.req, x.s.limits)
	switch {
	case err == nil:
		if x.req.ProtoMajor != 1 {
			return leave, x.refuse(http.StatusHTTPVersionNotSupported, http1.ErrVersion.Reason)
		}
		x.r += n
		x.f = f
		return gotHead, 0
	case errors.Is(err, http1.ErrIncomplete):
		if len(b) > x.s.cfg.MaxHeaderBytes+headSlack {
			return leave, x.refuse(http.StatusRequestHeaderFieldsTooLarge, "head too large")
		}
		return needMore, 0
	}
	if first && (x.s.cfg.H2C != nil || x.s.cfg.H2CEngine != nil) && !looksHTTP1(b) {
		// Neither HTTP/1 nor HTTP/2's preface: on a port that speaks h2c
		// this is a broken HTTP/2 client as likely as an HTTP/1 one, and
		// RFC 9113 §3.4 says to end the connection; an HTTP/1 answer
		// would only be read as a malformed frame.
		x.s.log.Debug("refused connection", "remote", x.remote, "reason", "neither HTTP/1 nor the HTTP/2 preface")
		if f := x.s.cfg.Refused; f != nil {
			f(httpmsg.Refusal{Listener: x.s.cfg.Name, Protocol: x.req.Protocol(), Reason: httpmsg.ReasonNotHTTP, Remote: x.remote})
		}
		return leave, engine.Close
	}
	status, reason := http.StatusBadRequest, err.Error()
	var pe *http1.Error
	if errors.As(err, &pe) && pe.Status != 0 {
		status, reason = pe.Status, pe.Reason
	}
	return leave, x.refuse(status, reason)
}

// looksHTTP1 reports whether b starts like an HTTP/1 request, however
// malformed the rest is: its first line names an HTTP version (any:
// "GET / HTTP/2.0" is answered 505), or it starts with a method, a space
// and the start of a target ("/", "*", "http://", "https://": a request
// line too long to end in the buffer is answered 414). HTTP/2 frames, TLS
// records and a broken HTTP/2 preface ("PRI ...") do not.
func looksHTTP1(b []byte) bool {
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line = b[:i]
	}
	if bytes.HasPrefix(line, []byte("PRI ")) {
		return false
	}
	if bytes.Contains(line, []byte(" HTTP/")) {
		return true
	}
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 || !httpsyntax.ValidToken(string(line[:sp])) {
		return false
	}
	t := line[sp+1:]
	return len(t) > 0 && (t[0] == '/' || t[0] == '*' || bytes.HasPrefix(t, []byte("http://")) || bytes.HasPrefix(t, []byte("https://")))
}

// fill reads more bytes into the buffer, making room first: it moves
// unread bytes to the front, or grows the buffer up to the head limit.
// Only called between requests, when no string of a request points into
// the buffer.
func (x *exchange) fill() error {
	if err := x.room(); err != nil {
		return err
	}
	n, err := x.c.Read(x.buf[x.w:])
	x.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// handOver gives an HTTP/2 connection to H2C, with what was read of it.
func (x *exchange) handOver() engine.Action {
	if h := x.s.cfg.H2CEngine; h != nil {
		pre := x.buf[x.r:x.w]
		x.r, x.w = 0, 0
		x.clearDeadline()
		// Lifetime: H2CEngine copies pre before it reads anything.
		return h(x.c, pre)
	}
	pc := &preConn{Conn: x.c, pre: append([]byte(nil), x.buf[x.r:x.w]...)}
	x.r, x.w = 0, 0
	x.clearDeadline()
	go x.s.serveH2(pc)
	return engine.Detach
}

func (s *Server) serveH2(pc *preConn) {
	defer func() {
		if v := recover(); v != nil && !panics.IsAbort(v) {
			panics.Report("h2c connection", v)
		}
		pc.Close()
	}()
	s.cfg.H2C(pc)
}

// preConn is a connection handed to H2C: its Read yields the bytes Serve
// already read before the connection's own.
type preConn struct {
	*engine.Conn
	pre []byte
}

// Read reads the pre-read bytes first.
func (c *preConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

var _ net.Conn = (*preConn)(nil)

// refuse answers a request that is not served with a short text/plain
// response and "Connection: close", then closes with a lingering close so
// that the client reads the answer.
func (x *exchange) refuse(status int, reason string) engine.Action {
	x.s.log.Debug("refused request", "remote", x.remote, "status", status, "reason", reason)
	if f := x.s.cfg.Refused; f != nil {
		f(httpmsg.Refusal{Listener: x.s.cfg.Name, Protocol: x.req.Protocol(), Status: status, Reason: httpmsg.ReasonCode(reason), Remote: x.remote})
	}
	text := http.StatusText(status)
	b := http1.AppendStatusLine(x.rw.buf()[:0], status)
	b = append(b, "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\nDate: "...)
	b = append(b, dates.get(time.Now())...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(text)+5), 10)
	b = append(b, "\r\n\r\n"...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, text...)
	b = append(b, '\n')
	x.rw.wbuf = b[:0]
	if _, err := x.c.Write(b); err == nil {
		x.linger()
	}
	return engine.Close
}
