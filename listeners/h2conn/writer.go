package h2conn

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// respState is a stream's response as its handler writes it: the head's
// block and small body writes wait in hbuf and dbuf, so that a small
// response goes out as one HEADERS and one DATA frame, in one write.
type respState struct {
	head      bool // a HEAD request
	status    int  // the final status; 0: none yet
	noBody    bool
	bodyLen   int64
	written   int64
	aborted   bool
	headSent  bool
	ended     bool // END_STREAM queued
	hbuf      []byte
	dbuf      []byte
	tbuf      []byte // the trailer block; nil: none
	fieldsArr [12]httpmsg.Field
	// The first bytes of hbuf and dbuf: a typical response's head and a
	// small body cost no allocation beyond the stream's.
	hbufArr [256]byte
	dbufArr [256]byte
}

// bodyChunk is how much body a stream gathers before it queues DATA.
const bodyChunk = 16 << 10

// WriteHead implements httpmsg.ResponseWriter.
func (st *stream) WriteHead(status int, h httpmsg.Header, bodyLen int64) error {
	w := &st.w
	switch {
	case w.status != 0:
		return errHeadWritten
	case status < 100 || status > 999:
		return errors.New("h2conn: invalid status")
	case status == http.StatusSwitchingProtocols:
		return st.switchWebSocket(h) // websocket.go
	}
	blk := appendStatus(w.hbuf[:0], status)
	for _, f := range h {
		blk = appendField(blk, f.Name, f.Value)
	}
	if status < 200 {
		w.hbuf = blk
		return st.sendInterim()
	}
	w.status, w.bodyLen = status, bodyLen
	w.noBody = w.head || status == http.StatusNoContent || status == http.StatusNotModified
	if bodyLen >= 0 && status != http.StatusNoContent {
		blk = appendContentLength(blk, bodyLen)
	}
	w.hbuf = blk
	return nil
}

// sendInterim queues a 1xx head at once.
func (st *stream) sendInterim() error {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := st.writableLocked(); err != nil {
		return err
	}
	c.queueHeadersLocked(st.id, st.w.hbuf, false)
	c.wakeWriterLocked()
	return nil
}

// Write implements httpmsg.ResponseWriter.
func (st *stream) Write(p []byte) (int, error) {
	w := &st.w
	switch {
	case w.status == 0:
		return 0, errNoHead
	case w.noBody:
		w.written += int64(len(p))
		return len(p), nil
	}
	n := len(p)
	var err error
	if w.bodyLen >= 0 && w.written+int64(n) > w.bodyLen {
		n, err = int(w.bodyLen-w.written), errBodyTooLong
	}
	w.written += int64(n)
	if len(w.dbuf)+n < bodyChunk {
		w.dbuf = append(w.dbuf, p[:n]...)
		return n, err
	}
	if e := st.send(w.dbuf, false); e != nil {
		return 0, e
	}
	w.dbuf = w.dbuf[:0]
	if e := st.send(p[:n], false); e != nil {
		return 0, e
	}
	return n, err
}

// Flush implements httpmsg.ResponseWriter.
func (st *stream) Flush() error {
	if st.w.status == 0 {
		return nil
	}
	err := st.send(st.w.dbuf, false)
	st.w.dbuf = st.w.dbuf[:0]
	return err
}

// WriteTrailer implements httpmsg.ResponseWriter: the fields go out in
// a HEADERS frame that ends the stream once the handler returns.
func (st *stream) WriteTrailer(h httpmsg.Header) error {
	blk := st.w.tbuf[:0]
	for _, f := range h {
		blk = appendField(blk, f.Name, f.Value)
	}
	st.w.tbuf = blk
	return nil
}

// Abort implements httpmsg.ResponseWriter: the stream is reset when the
// handler returns.
func (st *stream) Abort() { st.w.aborted = true }

// SetReadDeadline implements httpmsg.ResponseWriter; it may be called
// from any goroutine.
func (st *stream) SetReadDeadline(t time.Time) error {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	st.readDL = t
	st.cond.Broadcast()
	return nil
}

// Tunnel implements httpmsg.ResponseWriter: only an extended CONNECT's
// stream carries a tunnel, a WebSocket (websocket.go).
func (st *stream) Tunnel(up net.Conn, pre []byte) error { return st.tunnel(up, pre) }

// writableLocked returns why st can take no more frames; c.mu is held.
func (st *stream) writableLocked() error {
	switch {
	case st.c.broken != nil:
		return st.c.broken
	case st.err != nil:
		return st.err
	case st.reset:
		return errStreamReset
	}
	return nil
}

// send queues the head (once) and p as DATA frames, as the flow-control
// windows and the connection's output bound allow, waiting for them up to
// the stall timeout; end ends the stream with the last frame.
func (st *stream) send(p []byte, end bool) error {
	c := st.c
	w := &st.w
	c.mu.Lock()
	defer c.mu.Unlock()
	var stallAt time.Time
	if c.cfg.StallTimeout > 0 {
		stallAt = time.Now().Add(c.cfg.StallTimeout)
	}
	for {
		if err := st.writableLocked(); err != nil {
			return err
		}
		if !w.headSent {
			w.headSent = true
			headEnd := end && len(p) == 0
			c.queueHeadersLocked(st.id, w.hbuf, headEnd)
			if headEnd {
				w.ended = true
				c.wakeWriterLocked()
				return nil
			}
		}
		if len(p) == 0 {
			if end {
				c.queueDataLocked(0, flagEndStream, st.id)
				w.ended = true
			}
			c.wakeWriterLocked()
			return nil
		}
		n := int64(len(p))
		n = min(n, st.sendWindow, c.sendWindow, int64(c.peerFrame))
		if len(c.out) >= maxOut {
			n = 0
		}
		if n <= 0 {
			c.wakeWriterLocked()
			if err := st.waitSendLocked(stallAt); err != nil {
				return err
			}
			continue
		}
		var flags byte
		if end && int(n) == len(p) {
			flags, w.ended = flagEndStream, true
		}
		c.queueDataLocked(int(n), flags, st.id)
		c.out = append(c.out, p[:n]...)
		st.sendWindow -= n
		c.sendWindow -= n
		p = p[n:]
		if c.cfg.StallTimeout > 0 {
			stallAt = time.Now().Add(c.cfg.StallTimeout)
		}
		if len(p) == 0 {
			c.wakeWriterLocked()
			return nil
		}
	}
}

// waitSendLocked waits for window or room in the output; past stallAt
// it resets the stream. c.mu is held.
func (st *stream) waitSendLocked(stallAt time.Time) error {
	c := st.c
	if !stallAt.IsZero() {
		now := time.Now()
		if !now.Before(stallAt) {
			c.resetLocked(st, codeCancel, "")
			return errStall
		}
		st.armTimer(stallAt.Sub(now))
	}
	c.sendCond.Wait()
	return nil
}

// finish ends the response once the handler returned: what is buffered
// goes out with END_STREAM, or the stream is reset when the handler
// aborted or wrote less body than it declared.
func (st *stream) finish() {
	c := st.c
	w := &st.w
	if st.ws.tunneled { // the tunnel ends the stream (websocket.go)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.handlers--
		// When the tunnel ended first, its stream's end found this
		// handler running and did not arm the park: the handler's end may
		// be the connection's last.
		c.wakeToParkLocked()
		return
	}
	if w.status == 0 && !w.aborted {
		st.WriteHead(http.StatusInternalServerError, nil, 0)
	}
	short := w.bodyLen >= 0 && w.written < w.bodyLen && !w.noBody
	if !w.aborted && !short {
		if w.tbuf != nil && !w.noBody {
			if st.send(w.dbuf, false) == nil {
				st.sendTrailers()
			}
		} else {
			st.send(w.dbuf, true)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock() // the stream's end calls the net.Conn (armIdleLocked): a panic leaves the lock free
	if !w.ended {
		c.resetLocked(st, codeInternal, "")
	}
	c.handlers--
	c.endLocalLocked(st)
	st.ctx.cancel()
	if st.timer != nil {
		st.timer.Stop()
	}
}

// sendTrailers queues the trailer block with END_STREAM.
func (st *stream) sendTrailers() {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.writableLocked() != nil {
		return
	}
	c.queueHeadersLocked(st.id, st.w.tbuf, true)
	st.w.ended = true
	c.wakeWriterLocked()
}
