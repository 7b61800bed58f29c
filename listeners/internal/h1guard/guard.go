// Package h1guard refuses HTTP/1.x request framing that two parsers could
// read differently (RFC 9112 §6, §7, §11.2: request smuggling). A Guard sits
// between a client connection and Go's HTTP server and runs an incremental
// state machine over every byte the server reads; on a violation it hands the
// server a request line the server itself answers with 400 and then EOF, so
// nothing of the offending request reaches a handler. The tradeoff: the guard
// keeps only a few fixed-size fields (no line buffer), so it decides per byte
// and stays allocation-free, at the cost of being stricter than Go in places
// (bare LF in chunked framing, whitespace after a chunk size).
package h1guard

import "io"

// Mode is what a Guard does with the bytes it reads.
type Mode uint8

// The modes of a Guard.
const (
	// Guarding: every byte runs through the state machine.
	Guarding Mode = iota
	// PassThrough: bytes are forwarded unparsed. Entered for the HTTP/2
	// prior-knowledge preface (the connection is HTTP/2 from then on) and
	// after the head of a request with an Upgrade header or method CONNECT
	// (the connection is then tunneled or closed after the response).
	PassThrough
	// Poisoned: a framing violation was found; the server is handed a
	// request line it refuses (400) and then EOF.
	Poisoned
)

// inject is what the server reads instead of a refused request head. A NUL
// makes any line invalid for Go's parser whatever partial line precedes it
// (request line: bad method or version; field line: bad name or value), and
// the trailing CRLFs let the parser fail on that line before it can see EOF
// (an EOF would close the connection without the 400).
const inject = "\x00\r\n\r\n"

// Guard is the framing state of one connection. The zero value is ready to
// use; it must not be copied after first use. A Guard is not safe for
// concurrent use; Go's server never reads a connection concurrently.
type Guard struct {
	// H2C allows the HTTP/2 prior-knowledge preface at the start of the
	// connection. Without it a PRI request is refused like any other
	// malformed request line.
	H2C bool

	off   int64 // stream offset of the next byte to scan
	mode  Mode
	upg   bool // PassThrough was entered after an Upgrade or CONNECT head
	st    state
	err   Error
	heads int64 // request heads accepted
	// injected counts the bytes of inject already handed out; it is
	// len(inject) when the violation needs no injection.
	injected int

	// Per-scan positions inside the buffer being scanned (-1: before it).
	reqStart  int // where the current request began
	lineStart int // where the current line began
	headEnd   int // where the accepted head's final empty line began
	cut       int // bytes of the buffer the server may see after a violation

	h head
	b body
}

// Mode reports the guard's current mode.
func (g *Guard) Mode() Mode { return g.mode }

// Upgraded reports whether PassThrough was entered after the head of an
// Upgrade or CONNECT request (and not for the HTTP/2 preface).
func (g *Guard) Upgraded() bool { return g.mode == PassThrough && g.upg }

// Err returns the violation that poisoned the guard, or nil.
func (g *Guard) Err() *Error {
	if g.mode != Poisoned {
		return nil
	}
	e := g.err
	return &e
}

// Heads returns how many request heads the guard accepted.
func (g *Guard) Heads() int64 { return g.heads }

// Offset returns how many bytes the guard has scanned.
func (g *Guard) Offset() int64 { return g.off }

// Read reads from src into p and returns what the HTTP server may see:
// the bytes read while guarding or passing through; on a violation, the
// accepted prefix followed by a refused request line, and EOF after it.
func (g *Guard) Read(src io.Reader, p []byte) (int, error) {
	switch g.mode {
	case PassThrough:
		return src.Read(p)
	case Poisoned:
		return g.readInjected(p)
	}
	n, err := src.Read(p)
	if n <= 0 {
		return n, err
	}
	keep := g.Filter(p[:n])
	if g.mode != Poisoned {
		return n, err
	}
	m, _ := g.readInjected(p[keep:])
	if keep+m == 0 {
		return 0, io.EOF
	}
	return keep + m, nil
}

func (g *Guard) readInjected(p []byte) (int, error) {
	if g.injected >= len(inject) {
		return 0, io.EOF
	}
	n := copy(p, inject[g.injected:])
	g.injected += n
	return n, nil
}

// Filter scans p, the next bytes of the stream, and returns how many of
// them the server may see: len(p) unless the scan poisoned the guard. Once
// the mode is not Guarding, Filter returns len(p) (PassThrough) or 0.
func (g *Guard) Filter(p []byte) int {
	switch g.mode {
	case PassThrough:
		return len(p)
	case Poisoned:
		return 0
	}
	g.reqStart, g.lineStart, g.headEnd = -1, 0, -1
	if g.st == stReqStart {
		g.reqStart = 0
	}
	i := 0
	for i < len(p) && g.mode == Guarding {
		if g.st < stBodyFirst {
			i = g.scanHead(p, i)
		} else {
			i = g.scanBody(p, i)
		}
	}
	g.off += int64(i)
	if g.mode == Poisoned {
		return g.cut
	}
	return len(p)
}
