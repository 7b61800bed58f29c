package h2conn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/listeners/engine"
)

// conn is one HTTP/2 connection. The read loop (serve's goroutine) owns
// the fields marked "reader"; mu guards the rest, which the streams'
// handler goroutines and the writer share.
type conn struct {
	s   *Server
	cfg *Config
	nc  net.Conn

	serverName string
	clientCert *x509.Certificate
	tlsVersion uint16
	tls        bool

	// reader
	*active  // nil while parked
	dec      *hpack.Decoder
	ctlStart time.Duration // since epoch: a parked connection keeps 8 bytes, not 24

	mu         sync.Mutex
	sendCond   sync.Cond // a stream waiting for window or room in out
	wcond      sync.Cond // the writer waiting for frames
	streams    map[uint32]*stream
	maxStream  uint32 // highest stream the client opened
	goAwayLast uint32
	open       int          // streams in streams not reset
	handlers   int          // handler goroutines running
	out        []byte       // frames for the writer
	sendWindow int64        // the connection's send window
	initWindow int64        // the client's SETTINGS_INITIAL_WINDOW_SIZE
	peerFrame  int          // the client's SETTINGS_MAX_FRAME_SIZE
	recvWindow int64        // what the client may still send on the connection
	unacked    int64        // connection window consumed and not yet granted back
	broken     error        // the connection failed: every stream's writes fail
	idleSince  atomic.Int64 // since epoch: when the last stream closed (atomic: the idle sweep reads it)
	recent     [32]uint32   // streams lately reset by this side: their frames are ignored
	nrecent    uint32
	ctl        int32         // reader
	credit     int8          // control frames the client earned with answers (earnLocked)
	prefaced   bool          // reader: the client's preface was read
	parkDue    bool          // reader: idle for parkGrace, park if still idle
	deadline   uint8         // the read deadline armed: dlNone, dlIdle, dlHeader, dlWake, dlPark
	goingAway  bool          // GOAWAY sent: no new streams
	closing    bool          // the writer ends once out is written
	writerOn   bool          // a writer goroutine runs (it starts on demand)
	writing    bool          // the writer is in a Write
	stopWriter bool          // the writer ends once out is empty: the connection parks
	writerDone chan struct{} // closed when the writer that runs ends

	// Parking (park.go): an engine connection with no stream waits on
	// the engine's epoll loop with no goroutine and no read buffer.
	ec                 *engine.Conn // nil: served by ServeConn, never parked
	prevIdle, nextIdle *conn        // the server's idle list, while parked (s.idle.mu)
	parked             bool         // waiting on the engine; whoever clears it serves or ends it
	inPark             bool         // the reader is deciding whether to park
	inIdle             bool         // on the idle list (s.idle.mu)
}

// The read deadline's purpose.
const (
	dlNone = iota
	dlIdle
	dlHeader
	dlWake // Shutdown woke the reader
	dlPark // the connection went idle: the reader is woken to park it
)

// epoch is the origin of the monotonic times a connection keeps as
// durations.
var epoch = time.Now()

var errConnClosed = errors.New("h2conn: connection closed")

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, cfg: &s.cfg, nc: nc, streams: map[uint32]*stream{}, active: getActive(),
		sendWindow: defaultWindow, initWindow: defaultWindow, peerFrame: defaultFrameSize,
		recvWindow: connWindow}
	c.sendCond.L, c.wcond.L = &c.mu, &c.mu
	c.setAddrs()
	if cs, ok := nc.(interface{ ConnectionState() tls.ConnectionState }); ok {
		st := cs.ConnectionState()
		c.tls, c.tlsVersion, c.serverName = true, st.Version, st.ServerName
		if len(st.VerifiedChains) > 0 && len(st.VerifiedChains[0]) > 0 {
			c.clientCert = st.VerifiedChains[0][0]
		}
	}
	c.dec = hpack.NewDecoder(4096, c.emit)
	c.dec.SetMaxStringLength(HardHeaderFactor * c.cfg.MaxHeaderBytes)
	return c
}

// setAddrs notes the connection's addresses in its active state, for
// its requests.
func (c *conn) setAddrs() {
	c.remote, c.local = addrPort(c.nc.RemoteAddr()), addrPort(c.nc.LocalAddr())
}

func addrPort(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.AddrPort()
	case interface{ AddrPort() netip.AddrPort }:
		return a.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// serve runs the connection: the preface, then frames until the client
// goes, a connection error or the end of a graceful shutdown.
func (c *conn) serve() {
	if c.start() {
		c.loop()
	}
}

// start queues the server's SETTINGS and reads the client's preface; false
// when the connection ended.
func (c *conn) start() bool {
	c.queueSettings()
	if c.s.shutting.Load() {
		c.goAwayGraceful()
	}
	if !c.readPreface() {
		c.abortStreams()
		c.closeNow()
		return false
	}
	return true
}

// loop reads and acts on frames until the connection ends (Close) or,
// for an engine connection, goes idle and parks (Park).
func (c *conn) loop() engine.Action {
	for {
		if c.ec != nil && c.r == c.w && !c.hb.open {
			if c.parkDue {
				c.parkDue = false
				if c.tryPark() {
					return engine.Park
				}
			} else {
				c.armPark()
			}
		}
		fh, p, err := c.readFrame()
		if err != nil && isTimeout(err) && (c.parkWoken() || !c.hb.open && c.rearmIdle()) {
			continue // not idle after all; a frame read in part stays
		}
		if err != nil {
			c.readFailed(err)
			c.abortStreams()
			return engine.Close
		}
		if err := c.process(fh, p); err != nil {
			c.fail(err)
			c.abortStreams()
			return engine.Close
		}
	}
}

// queueSettings queues the server's SETTINGS and the connection window.
func (c *conn) queueSettings() {
	c.mu.Lock()
	b := appendFrameHeader(c.out, 5*6, frameSettings, 0, 0)
	b = appendSetting(b, settingMaxConcurrentStreams, uint32(c.cfg.MaxConcurrentStreams))
	b = appendSetting(b, settingInitialWindowSize, streamWindow)
	b = appendSetting(b, settingMaxFrameSize, uint32(c.cfg.MaxFrameSize))
	b = appendSetting(b, settingMaxHeaderListSize, uint32(HardHeaderFactor*c.cfg.MaxHeaderBytes))
	b = appendSetting(b, settingEnableConnectProtocol, 1) // websocket.go
	c.out = appendWindowUpdate(b, 0, connWindow-defaultWindow)
	c.wakeWriterLocked()
	c.mu.Unlock()
}

func appendSetting(b []byte, id uint16, v uint32) []byte {
	return appendUint32(append(b, byte(id>>8), byte(id)), v)
}

func (c *conn) readPreface() bool {
	if c.cfg.ReadHeaderTimeout > 0 {
		c.nc.SetReadDeadline(time.Now().Add(c.cfg.ReadHeaderTimeout))
	}
	if err := c.fill(len(clientPreface)); err != nil || string(c.rbuf[:len(clientPreface)]) != clientPreface {
		return false
	}
	c.r = len(clientPreface)
	c.nc.SetReadDeadline(time.Time{})
	c.prefacedDone()
	return true
}

// prefacedDone notes the preface read and arms the idle timeout.
func (c *conn) prefacedDone() {
	c.mu.Lock()
	defer c.mu.Unlock() // armIdleLocked calls the net.Conn: a panic leaves the lock free
	c.prefaced = true
	c.armIdleLocked()
}

// fill reads until the buffer holds n unread bytes, growing it when n is
// more than it can hold.
func (c *conn) fill(n int) error {
	if c.w-c.r >= n {
		return nil
	}
	if c.r+n > len(c.rbuf) {
		if n > len(c.rbuf) {
			nb := make([]byte, n)
			copy(nb, c.rbuf[c.r:c.w])
			c.rbuf = nb
		} else {
			copy(c.rbuf, c.rbuf[c.r:c.w])
		}
		c.w -= c.r
		c.r = 0
	}
	for c.w-c.r < n {
		if c.hb.open && c.cfg.ReadHeaderTimeout > 0 {
			c.armHeaderDeadline()
		}
		k, err := c.nc.Read(c.rbuf[c.w:])
		c.w += k
		if err != nil && c.w-c.r < n {
			if errors.Is(err, io.EOF) && c.w > c.r {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}

// readFrame returns the next frame; its payload is valid until the next
// call. A frame over MaxFrameSize is a connection error read no further.
func (c *conn) readFrame() (frameHeader, []byte, error) {
	if c.r == c.w && cap(c.rbuf) > frameHeaderLen+c.cfg.MaxFrameSize && c.cfg.MaxFrameSize > defaultFrameSize {
		// a large frame grew the buffer: give it back between frames
		c.rbuf, c.r, c.w = getReadBuf(), 0, 0
	}
	if err := c.fill(frameHeaderLen); err != nil {
		return frameHeader{}, nil, err
	}
	fh := parseFrameHeader(c.rbuf[c.r:])
	if fh.length > uint32(c.cfg.MaxFrameSize) {
		return fh, nil, &connError{code: codeFrameSize, kind: httpmsg.ReasonFrameTooLarge, why: "frame larger than SETTINGS_MAX_FRAME_SIZE"}
	}
	if err := c.fill(frameHeaderLen + int(fh.length)); err != nil {
		return fh, nil, err
	}
	p := c.rbuf[c.r+frameHeaderLen : c.r+frameHeaderLen+int(fh.length)]
	c.r += frameHeaderLen + int(fh.length)
	return fh, p, nil
}

// readFailed ends the connection after a failed read: a connection
// error, a timeout (header block, idle, shutdown) or the client gone.
func (c *conn) readFailed(err error) {
	var ce *connError
	if errors.As(err, &ce) {
		c.fail(err)
		return
	}
	if !isTimeout(err) {
		c.closeNow()
		return
	}
	c.mu.Lock()
	dl := c.deadline
	c.mu.Unlock()
	switch {
	case c.hb.open:
		c.fail(&connError{code: codeCalm, kind: httpmsg.ReasonHeaderTimeout, why: "header block not finished within the read header timeout"})
	case dl == dlWake:
		c.closeGoAway(codeNo) // a graceful shutdown whose streams are done
	default:
		c.closeGoAway(codeNo) // idle
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// fail ends the connection on a connection error, reported when it is
// the client's.
func (c *conn) fail(err error) {
	var ce *connError
	if !errors.As(err, &ce) {
		c.closeNow()
		return
	}
	if ce.kind != "" {
		c.refuse(0, ce.kind)
	}
	c.closeGoAway(ce.code)
}

// refuse reports a refusal.
func (c *conn) refuse(status int, reason string) {
	if c.cfg.Refused != nil {
		c.cfg.Refused(httpmsg.Refusal{Listener: c.cfg.Listener, Protocol: "HTTP/2", Status: status, Reason: reason, Remote: c.remote})
	}
}

// control counts a control frame against the per-second limit.
func (c *conn) control() error {
	c.ctl++
	if c.ctl == 1 {
		c.ctlStart = time.Since(epoch)
	}
	if int(c.ctl) <= c.cfg.MaxControlPerSecond {
		return nil
	}
	now := time.Since(epoch)
	if now-c.ctlStart < time.Second {
		return &connError{code: codeCalm, kind: httpmsg.ReasonControlFrameFlood, why: "control frame flood"}
	}
	c.ctl, c.ctlStart = 1, now
	return nil
}

// maxCredit bounds the control frames answers can earn ahead.
const maxCredit = 16

// earnLocked notes an answer queued (a response's HEADERS, trailers or a
// DATA frame of at least earnData bytes): it earns the client one PING
// or tiny WINDOW_UPDATE that control does not count. gRPC clients send,
// for about every round trip while data arrives, a WINDOW_UPDATE of what
// they took (often a few bytes) and a PING (BDP estimation): far past
// MaxControlPerSecond on a fast link, and each earned by an answer. A
// flood gets no answer between its frames: it is counted. A tiny DATA
// frame earns nothing, or a client that opens a window a byte at a time
// would pay for each WINDOW_UPDATE with the 1-byte frame it caused; nor
// does a refusal's answer (answerLocked). c.mu is held.
func (c *conn) earnLocked() {
	if c.credit < maxCredit {
		c.credit++
	}
}

// earnData is the least DATA payload that earns a control frame: the
// size under which a WINDOW_UPDATE counts as tiny.
const earnData = 1024

// queueHeadersLocked queues a header block for stream id (split into
// CONTINUATION frames as the client's frame size asks) and earns the
// client a control frame. c.mu is held.
func (c *conn) queueHeadersLocked(id uint32, block []byte, endStream bool) {
	c.out = appendHeaderFrames(c.out, id, block, endStream, c.peerFrame)
	c.earnLocked()
}

// queueDataLocked queues the header of a DATA frame of n bytes (the
// caller appends the payload), which earns the client a control frame
// when it is not tiny. c.mu is held.
func (c *conn) queueDataLocked(n int, flags byte, id uint32) {
	c.out = appendFrameHeader(c.out, n, frameData, flags, id)
	if n >= earnData {
		c.earnLocked()
	}
}

// spend takes one earned control frame; false when there is none.
func (c *conn) spend() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.credit == 0 {
		return false
	}
	c.credit--
	return true
}

// armHeaderDeadline bounds an open header block, once: from its first
// frame on, the block has ReadHeaderTimeout.
func (c *conn) armHeaderDeadline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadline != dlHeader {
		c.deadline = dlHeader
		c.nc.SetReadDeadline(c.hb.start.Add(c.cfg.ReadHeaderTimeout))
	}
}

// blockDone takes back the header block's deadline.
func (c *conn) blockDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadline == dlHeader {
		c.deadline = dlNone
		c.nc.SetReadDeadline(time.Time{})
		c.armIdleLocked()
	}
}

// armIdleLocked notes that no stream is open and arms the idle timeout
// unless it is armed already; a graceful shutdown with no stream left
// wakes the reader at once. The deadline is not taken back when a stream
// opens: when it passes, rearmIdle decides whether the connection was
// idle that long, so that a busy connection costs one deadline change an
// idle timeout, not two a request.
func (c *conn) armIdleLocked() {
	switch {
	case c.deadline == dlHeader || len(c.streams) > 0:
		return
	case c.goingAway:
		c.deadline = dlWake
		c.nc.SetReadDeadline(time.Now())
		return
	case c.cfg.IdleTimeout > 0:
		c.idleSince.Store(int64(time.Since(epoch)))
		if c.deadline != dlIdle {
			c.deadline = dlIdle
			c.nc.SetReadDeadline(c.idleDeadline())
		}
	}
	c.wakeToParkLocked()
}

// idleDeadline is when the idle timeout ends an idle connection.
func (c *conn) idleDeadline() time.Time {
	return epoch.Add(time.Duration(c.idleSince.Load()) + c.cfg.IdleTimeout)
}

// busyLocked is a stream opening; the idle deadline stays (see
// armIdleLocked).
func (c *conn) busyLocked() {}

// rearmIdle is the idle deadline passing: it reports whether the
// connection was not idle that long, and then arms the deadline again.
func (c *conn) rearmIdle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deadline != dlIdle {
		return false
	}
	now := time.Now()
	switch {
	case len(c.streams) > 0:
		c.nc.SetReadDeadline(now.Add(c.cfg.IdleTimeout))
	case time.Since(epoch)-time.Duration(c.idleSince.Load()) < c.cfg.IdleTimeout:
		c.nc.SetReadDeadline(c.idleDeadline())
	default:
		return false
	}
	return true
}

// goAwayGraceful sends GOAWAY (NO_ERROR): the streams open go on, no
// new one is served, and the connection closes when they are done.
func (c *conn) goAwayGraceful() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimParkedLocked() {
		// no goroutine holds a parked connection: one sends the GOAWAY
		panics.Go("h2 goaway", func() { c.endClaimed(codeNo) })
		return
	}
	if c.goingAway || c.closing {
		return
	}
	c.goingAway, c.goAwayLast = true, c.maxStream
	c.out = appendGoAway(c.out, c.maxStream, codeNo)
	c.wakeWriterLocked() // a writer stopped for a park in progress starts again
	c.armIdleLocked()
}

// closeGoAway sends GOAWAY with code (unless one was sent: a graceful
// GOAWAY's last stream stays), waits for the writer to send it, then
// lingers so that the client reads it before the close, and closes.
func (c *conn) closeGoAway(code uint32) {
	c.mu.Lock()
	if !c.goingAway || code != codeNo {
		c.out = appendGoAway(c.out, c.maxStream, code)
	}
	c.goingAway, c.closing = true, true
	c.wakeWriterLocked()
	done := c.writerDone
	if done == nil {
		done = closedChan // no writer since the connection parked
	}
	c.mu.Unlock()
	t := time.NewTimer(lingerTime)
	select {
	case <-done:
	case <-t.C:
	}
	t.Stop()
	c.linger()
}

// lingerTime is how long a connection ended by this side drains the
// client, so that the close does not reset the connection before the
// client read the GOAWAY.
const lingerTime = time.Second

func (c *conn) linger() {
	if cw, ok := c.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	var buf [512]byte
	for {
		if _, err := c.nc.Read(buf[:]); err != nil {
			break
		}
	}
	c.closeNow()
}

// closeNow closes the connection; the streams' writes fail.
func (c *conn) closeNow() {
	c.mu.Lock()
	if c.broken == nil {
		c.broken = errConnClosed
	}
	c.closing = true
	c.wcond.Signal()
	c.sendCond.Broadcast()
	c.mu.Unlock()
	c.nc.Close()
}

// abortStreams ends every stream when the connection ends: their
// contexts are canceled and their reads and writes fail.
func (c *conn) abortStreams() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = errConnClosed
	}
	for _, st := range c.streams {
		st.closeLocked(errConnClosed)
	}
	c.sendCond.Broadcast()
}

// writeLoop writes what the streams and the read loop queued: all the
// frames ready at one time go out in one write. It ends when the
// connection closes, or once out is empty when the connection parks
// (wakeWriterLocked starts it again). c.mu is held only inside
// nextWrite and writeFailed, each of which releases it by defer: a
// panic (a net.Conn's method, say) leaves it free, and writerPanicked
// then ends the connection, so that no stream, reader or park waits on
// a writer that is gone.
func (c *conn) writeLoop() {
	var wdl time.Time // the write deadline as last set
	done, buf := c.writerStart()
	ended := false
	defer func() {
		if !ended {
			c.writerPanicked(done)
		}
	}()
	for {
		var more bool
		if buf, more = c.nextWrite(buf); !more {
			ended = true
			close(done)
			return
		}
		// The deadline moves once an eighth of the timeout has passed, not
		// at every write: a peer that takes nothing is cut off between
		// 7/8 of the timeout and the timeout.
		if d := time.Now().Add(c.cfg.WriteTimeout); d.Sub(wdl) > c.cfg.WriteTimeout/8 {
			wdl = d
			c.nc.SetWriteDeadline(d)
		}
		if _, err := c.nc.Write(buf); err != nil {
			c.writeFailed(err)
			ended = true
			close(done)
			return
		}
		if cap(buf) > 4*maxOut {
			buf = nil
		}
	}
}

// writerStart returns the running writer's done channel and the
// buffer the last writer left.
func (c *conn) writerStart() (done chan struct{}, buf []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active != nil {
		buf, c.spareW = c.spareW[:0], nil
	}
	return c.writerDone, buf
}

// nextWrite waits for frames and swaps them into buf; false when the
// writer is to end (the connection closed, or it parks).
func (c *conn) nextWrite(buf []byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing = false
	if len(c.out) == 0 {
		c.wakeToParkLocked()
	}
	for len(c.out) == 0 && !c.closing && !c.stopWriter {
		c.wcond.Wait()
	}
	if len(c.out) == 0 || c.broken != nil {
		c.writerOn = false
		if c.active != nil {
			c.spareW = buf[:0] // for the next writer
		}
		return nil, false
	}
	buf, c.out = c.out, buf[:0]
	c.writing = true
	c.sendCond.Broadcast() // room in out
	return buf, true
}

// writeFailed ends the connection after a failed write.
func (c *conn) writeFailed(err error) { c.endWriter(err, false) }

// errWriterPanic is a connection whose writer panicked.
var errWriterPanic = errors.New("h2conn: connection writer panicked")

// writerPanicked ends the connection of a writer that panicked (the
// panic goes on to panics.Go, which reports it): the streams' writes
// fail, the read loop's read fails and it ends the connection, and a
// park or close waiting for the writer goes on.
func (c *conn) writerPanicked(done chan struct{}) {
	defer close(done)
	c.endWriter(errWriterPanic, true)
}

// endWriter marks the writer gone on err, wakes the streams waiting for
// room and closes the socket; closing also marks the connection closing
// and wakes whoever waits for the writer's frames (after a panic no
// other path ends it).
func (c *conn) endWriter(err error, closing bool) {
	defer c.nc.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = err
	}
	if closing {
		c.closing = true
		c.wcond.Broadcast()
	}
	c.writing, c.writerOn = false, false
	c.sendCond.Broadcast()
}

// wakeWriterLocked has the writer send what is queued, starting it when
// none runs (not for a parked connection: whoever claims it does).
func (c *conn) wakeWriterLocked() {
	switch {
	case c.writerOn:
		c.wcond.Signal()
	case !c.parked && c.broken == nil:
		c.writerOn = true
		c.writerDone = make(chan struct{})
		panics.Go("h2 writer", c.writeLoop)
	}
}

// recentlyReset reports a stream this side reset lately; c.mu is held.
func (c *conn) recentlyReset(id uint32) bool {
	for _, r := range c.recent {
		if r == id {
			return true
		}
	}
	return false
}

// noteReset records a stream this side reset; c.mu is held.
func (c *conn) noteReset(id uint32) {
	c.recent[c.nrecent%uint32(len(c.recent))] = id
	c.nrecent++
}
