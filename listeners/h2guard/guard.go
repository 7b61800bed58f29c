package h2guard

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
)

// Config holds the guard's limits. Zero values take the defaults noted.
type Config struct {
	// ReadHeaderTimeout bounds how long a header block (HEADERS and its
	// CONTINUATION frames) may stay open. Zero: no bound.
	ReadHeaderTimeout time.Duration
	// MaxFrameSize is the largest frame payload the server accepts (its
	// SETTINGS_MAX_FRAME_SIZE). Default 16384.
	MaxFrameSize uint32
	// MaxHeaderBytes bounds a header block's decoded list size (RFC 9113
	// §6.5.2: each field's name and value plus 32 bytes), each of its
	// strings, and its encoded size, all its frames together, at twice
	// this. Set it below the server's own limits, so that the guard, which
	// reports, trips first. Default 1 MiB.
	MaxHeaderBytes int
	// MaxContinuations caps the CONTINUATION frames of one header block.
	// Default: what MaxHeaderBytes needs at 1 KiB a frame, plus 8.
	MaxContinuations int
	// MaxControlPerSecond caps the SETTINGS, PING, RST_STREAM and
	// PRIORITY frames (and frames of unknown type) a client may send in a
	// second. Default 1000.
	MaxControlPerSecond int
	// HeaderTableSize is the server's HPACK dynamic table limit
	// (SETTINGS_HEADER_TABLE_SIZE it advertises). Default 4096, x/net's.
	HeaderTableSize uint32
	// Report, when set, is told of every violation that ends a
	// connection (once per connection), with the connection's remote
	// address, on the connection's read goroutine; it must be quick.
	Report func(remote net.Addr, v *Violation)
	// ReportStream, when set, is told of each header block with a field
	// the server refuses on that stream alone (an invalid name or value,
	// a pseudo-header after a regular field: x/net resets the stream
	// without counting it), on the read goroutine; the connection goes
	// on. v is shared: it must not be changed.
	ReportStream func(remote net.Addr, v *Violation)
}

func (c Config) withDefaults() Config {
	if c.MaxFrameSize == 0 {
		c.MaxFrameSize = 16384
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 1 << 20
	}
	if c.MaxContinuations <= 0 {
		c.MaxContinuations = c.MaxHeaderBytes/1024 + 8
	}
	if c.MaxControlPerSecond <= 0 {
		c.MaxControlPerSecond = 1000
	}
	if c.HeaderTableSize == 0 {
		c.HeaderTableSize = 4096
	}
	return c
}

// HTTP/2 frame types and flags the guard reads (RFC 9113 §6).
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9

	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

// HTTP/2 error codes the guard sends (RFC 9113 §7).
const (
	codeProtocol    = 0x1
	codeFrameSize   = 0x6
	codeCompression = 0x9
	codeCalm        = 0xb
)

const prefaceLen = 24 // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// lingerTime is how long the guard drains a connection it ended, so that
// the client reads the GOAWAY before the close resets the connection.
const lingerTime = time.Second

// goAwayWait bounds how long a violation waits for the server to finish
// the frame it is writing, so that the GOAWAY goes out at a frame
// boundary. The server flushes the rest of that frame as soon as its
// write queue drains, well within this on a busy machine; a server that
// writes no more (its client stopped reading) gets no GOAWAY.
const goAwayWait = 500 * time.Millisecond

// Violation is the error Read returns once the guard ended the
// connection; Code is the GOAWAY's error code.
type Violation struct {
	Code uint32
	// Kind is machine-readable, one of a fixed set (an httpmsg.Reason
	// constant), for logs and metrics.
	Kind   string
	Reason string // for a person; may carry a decoder's error text
}

func (v *Violation) Error() string { return "h2guard: " + v.Reason }

// ErrClosed is returned by Write after the guard ended the connection.
var ErrClosed = errors.New("h2guard: connection ended by the guard")

// Conn watches the client's frames on an HTTP/2 connection. Read and
// Write must each be called from one goroutine at a time (as the x/net
// server does: one reader, one writer).
type Conn struct {
	net.Conn
	cfg Config
	in  input

	mu  sync.Mutex // held by Write and by the GOAWAY injection
	out output
	// served is set when the server wrote a HEADERS or DATA frame, and
	// taken by the next PING the client sends (input.scan): such a PING
	// is not counted against MaxControlPerSecond.
	served  atomic.Bool
	pending *ending // a GOAWAY waiting for the server's frame in progress
	ended   bool
	closer  sync.Once
	done    chan struct{} // closed when the linger ends
}

// ending is a violation's GOAWAY that waits for the end of the frame the
// server is writing: a GOAWAY inside a frame would corrupt the stream.
type ending struct {
	code uint32
	sent chan struct{} // closed once the GOAWAY is written (or cannot be)
}

// New wraps c, whose next bytes are the client's connection preface.
// When c is a TLS connection (it has ConnectionState), so is the
// result, so that the server still sees the TLS state.
func New(c net.Conn, cfg Config) net.Conn {
	g := newConn(c, cfg)
	if cs, ok := c.(connectionStater); ok {
		return &tlsConn{Conn: g, cs: cs}
	}
	return g
}

func newConn(c net.Conn, cfg Config) *Conn {
	g := &Conn{Conn: c, cfg: cfg.withDefaults()}
	g.in.g = g
	g.in.skip = prefaceLen
	return g
}

type connectionStater interface {
	ConnectionState() tls.ConnectionState
}

// tlsConn is a guarded TLS connection.
type tlsConn struct {
	*Conn
	cs connectionStater
}

// ConnectionState returns the TLS connection's state.
func (t *tlsConn) ConnectionState() tls.ConnectionState { return t.cs.ConnectionState() }

// Read reads from the connection and checks every frame header in what
// it returns. On a violation it returns only the bytes before the
// offending frame, sends GOAWAY and ends the connection.
func (g *Conn) Read(p []byte) (int, error) {
	n, err := g.Conn.Read(p)
	if err != nil && g.in.blockOpen && isTimeout(err) {
		v := &Violation{Code: codeCalm, Kind: httpmsg.ReasonHeaderTimeout, Reason: "header block not finished within the read header timeout"}
		g.end(v)
		return n, v
	}
	if n > 0 {
		if k, v := g.in.scan(p[:n]); v != nil {
			g.end(v)
			return k, v
		}
	}
	return n, err
}

// Write writes server output, keeping count of its frame boundaries.
func (g *Conn) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended {
		return 0, ErrClosed
	}
	if g.pending != nil {
		return g.finishFrame(p)
	}
	n, err := g.Conn.Write(p)
	g.out.advance(p[:n])
	g.noteAnswer()
	return n, err
}

// noteAnswer moves what advance saw to served. g.mu is held.
func (g *Conn) noteAnswer() {
	if g.out.answered {
		g.out.answered = false
		g.served.Store(true)
	}
}

// finishFrame writes what p holds of the server's frame in progress and,
// once that frame is complete, the pending GOAWAY; the rest of p is
// dropped. g.mu is held.
func (g *Conn) finishFrame(p []byte) (int, error) {
	n, err := g.Conn.Write(p[:g.out.frameEnd(p)])
	g.out.advance(p[:n])
	g.noteAnswer()
	switch {
	case err != nil: // no GOAWAY can follow
		g.ended = true
	case !g.out.atBoundary():
		return n, nil
	default:
		g.writeGoAway(g.pending.code)
		if n < len(p) {
			err = ErrClosed
		}
	}
	close(g.pending.sent)
	return n, err
}

// Close closes the connection; after a violation it waits for the
// linger to end first.
func (g *Conn) Close() error {
	g.mu.Lock()
	done := g.done
	g.mu.Unlock()
	if done != nil {
		<-done
		return nil
	}
	return g.Conn.Close()
}

// end sends GOAWAY with v's code, then lingers and closes. When the
// server is mid-frame, the GOAWAY waits (up to goAwayWait) for Write to
// finish that frame: the server would otherwise stop at the Read error
// with the frame's rest still in its buffer.
func (g *Conn) end(v *Violation) {
	g.closer.Do(func() {
		if g.cfg.Report != nil {
			g.cfg.Report(g.Conn.RemoteAddr(), v)
		}
		// A Write blocked on a client that does not read would hold mu
		// forever: the deadline ends it.
		_ = g.Conn.SetWriteDeadline(time.Now().Add(lingerTime))
		g.mu.Lock()
		g.done = make(chan struct{})
		var wait *ending
		if g.out.atBoundary() {
			g.writeGoAway(v.Code)
		} else {
			wait = &ending{code: v.Code, sent: make(chan struct{})}
			g.pending = wait
		}
		g.mu.Unlock()
		if wait != nil {
			g.awaitGoAway(wait)
		}
		go g.linger()
	})
}

// awaitGoAway waits for Write to send the pending GOAWAY; past
// goAwayWait the connection ends without one.
func (g *Conn) awaitGoAway(e *ending) {
	t := time.NewTimer(goAwayWait)
	defer t.Stop()
	select {
	case <-e.sent:
	case <-t.C:
		g.mu.Lock()
		g.ended = true
		g.mu.Unlock()
	}
}

// writeGoAway writes a GOAWAY with code and marks the guard ended; g.mu
// is held and the server's output is at a frame boundary.
func (g *Conn) writeGoAway(code uint32) {
	g.ended = true
	var f [17]byte
	putFrameHeader(f[:], 8, frameGoAway, 0, 0)
	binary.BigEndian.PutUint32(f[9:], g.in.lastStream)
	binary.BigEndian.PutUint32(f[13:], code)
	_, _ = g.Conn.Write(f[:])
}

// linger half-closes, drains what the client still sends for a while,
// then closes, so that the GOAWAY is not lost to a reset.
func (g *Conn) linger() {
	defer close(g.done)
	defer panics.Recover("h2 goaway linger")
	if cw, ok := g.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = g.Conn.SetReadDeadline(time.Now().Add(lingerTime))
	var buf [512]byte
	for {
		if _, err := g.Conn.Read(buf[:]); err != nil {
			break
		}
	}
	g.Conn.Close()
}

func putFrameHeader(b []byte, length uint32, typ, flags byte, stream uint32) {
	b[0], b[1], b[2] = byte(length>>16), byte(length>>8), byte(length)
	b[3], b[4] = typ, flags
	binary.BigEndian.PutUint32(b[5:], stream)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// output tracks the server's frame boundaries in the bytes it wrote.
type output struct {
	hdr  [9]byte
	nhdr int    // bytes of hdr filled
	rem  uint32 // payload bytes left of the current frame
	// answered: advance saw the server write a HEADERS or DATA frame
	// (Conn.noteAnswer moves it to Conn.served).
	answered bool
}

func (o *output) atBoundary() bool { return o.nhdr == 0 && o.rem == 0 }

// frameEnd returns how many bytes of p finish the frame in progress
// (len(p) when p ends before the frame does).
func (o output) frameEnd(p []byte) int {
	for i := 0; i < len(p); {
		if o.rem > 0 {
			k := int(min(uint32(len(p)-i), o.rem))
			o.rem -= uint32(k)
			i += k
			if o.rem == 0 {
				return i
			}
			continue
		}
		k := copy(o.hdr[o.nhdr:], p[i:])
		o.nhdr += k
		i += k
		if o.nhdr == 9 {
			o.rem = uint32(o.hdr[0])<<16 | uint32(o.hdr[1])<<8 | uint32(o.hdr[2])
			o.nhdr = 0
			if o.rem == 0 {
				return i
			}
		}
	}
	return len(p)
}

func (o *output) advance(p []byte) {
	for len(p) > 0 {
		if o.rem > 0 {
			k := uint32(min(len(p), int(min(o.rem, 1<<30))))
			o.rem -= k
			p = p[k:]
			continue
		}
		k := copy(o.hdr[o.nhdr:], p)
		o.nhdr += k
		p = p[k:]
		if o.nhdr == 9 {
			o.rem = uint32(o.hdr[0])<<16 | uint32(o.hdr[1])<<8 | uint32(o.hdr[2])
			o.nhdr = 0
			if t := o.hdr[3]; t == frameData || t == frameHeaders {
				o.answered = true
			}
		}
	}
}

// newDecoder returns the HPACK decoder that mirrors the server's.
func newDecoder(cfg Config, emit func(hpack.HeaderField)) *hpack.Decoder {
	d := hpack.NewDecoder(cfg.HeaderTableSize, emit)
	d.SetMaxStringLength(cfg.MaxHeaderBytes)
	return d
}
