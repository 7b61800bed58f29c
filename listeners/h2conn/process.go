package h2conn

import (
	"encoding/binary"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

var (
	errProtocol = func(why string) error {
		return &connError{code: codeProtocol, kind: httpmsg.ReasonProtocolError, why: why}
	}
	errFrameSize = func(why string) error {
		return &connError{code: codeFrameSize, kind: httpmsg.ReasonProtocolError, why: why}
	}
)

// process acts on one client frame. It returns a connection error; a
// stream error resets its stream and returns nil.
func (c *conn) process(fh frameHeader, p []byte) error {
	if c.hb.open && (fh.typ != frameContinuation || fh.stream != c.hb.stream) {
		return errProtocol("frame inside a header block")
	}
	switch fh.typ {
	case frameData:
		return c.onData(fh, p)
	case frameHeaders:
		return c.onHeaders(fh, p)
	case frameContinuation:
		return c.onContinuation(fh, p)
	case framePriority:
		return c.onPriority(fh, p)
	case frameRSTStream:
		return c.onRST(fh, p)
	case frameSettings:
		return c.onSettings(fh, p)
	case framePing:
		return c.onPing(fh, p)
	case frameGoAway:
		if fh.stream != 0 {
			return errProtocol("GOAWAY on a stream")
		}
		return nil
	case frameWindowUpdate:
		return c.onWindowUpdate(fh, p)
	case framePushPromise:
		return errProtocol("PUSH_PROMISE from a client")
	}
	return c.control() // unknown types are ignored (RFC 9113 §4.1)
}

func (c *conn) onPing(fh frameHeader, p []byte) error {
	switch {
	case fh.length != 8:
		return errFrameSize("PING payload not 8 bytes")
	case fh.stream != 0:
		return errProtocol("PING on a stream")
	case fh.flags&flagAck != 0:
		return nil
	}
	// A PING earned by an answer is not counted (earnLocked).
	if !c.spend() {
		if err := c.control(); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.out = append(appendFrameHeader(c.out, 8, framePing, flagAck, 0), p...)
	c.wakeWriterLocked()
	c.mu.Unlock()
	return nil
}

func (c *conn) onSettings(fh frameHeader, p []byte) error {
	switch {
	case fh.stream != 0:
		return errProtocol("SETTINGS on a stream")
	case fh.flags&flagAck != 0:
		if fh.length != 0 {
			return errFrameSize("SETTINGS ACK with a payload")
		}
		return nil
	case fh.length%6 != 0:
		return errFrameSize("SETTINGS payload not a multiple of 6")
	}
	if err := c.control(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; len(p) >= 6; p = p[6:] {
		id, v := binary.BigEndian.Uint16(p), binary.BigEndian.Uint32(p[2:])
		if err := c.applySettingLocked(id, v); err != nil {
			return err
		}
	}
	c.out = appendFrameHeader(c.out, 0, frameSettings, flagAck, 0)
	c.wakeWriterLocked()
	return nil
}

// applySettingLocked applies one of the client's settings (RFC 9113
// §6.5.2); c.mu is held.
func (c *conn) applySettingLocked(id uint16, v uint32) error {
	switch id {
	case settingEnablePush:
		if v > 1 {
			return errProtocol("SETTINGS_ENABLE_PUSH not 0 or 1")
		}
	case settingInitialWindowSize:
		if v > maxWindow {
			return &connError{code: codeFlowControl, kind: httpmsg.ReasonFlowControl, why: "SETTINGS_INITIAL_WINDOW_SIZE too large"}
		}
		delta := int64(v) - c.initWindow
		c.initWindow = int64(v)
		for _, st := range c.streams {
			st.sendWindow += delta
			if st.sendWindow > maxWindow {
				return &connError{code: codeFlowControl, kind: httpmsg.ReasonFlowControl, why: "a stream's window over 2^31-1"}
			}
		}
		c.sendCond.Broadcast()
	case settingMaxFrameSize:
		if v < defaultFrameSize || v > 1<<24-1 {
			return errProtocol("SETTINGS_MAX_FRAME_SIZE out of range")
		}
		c.peerFrame = int(v)
	}
	return nil
}

func (c *conn) onWindowUpdate(fh frameHeader, p []byte) error {
	if fh.length != 4 {
		return errFrameSize("WINDOW_UPDATE payload not 4 bytes")
	}
	incr := int64(binary.BigEndian.Uint32(p) & 0x7fffffff)
	if incr < earnData && !c.spend() {
		// Tiny increments make the server send tiny frames: counted as
		// control frames, so that a flood of them ends the connection,
		// unless an answer earned it (earnLocked).
		if err := c.control(); err != nil {
			return err
		}
	}
	if fh.stream == 0 {
		if incr == 0 {
			return errProtocol("WINDOW_UPDATE of 0")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.sendWindow += incr
		if c.sendWindow > maxWindow {
			return &connError{code: codeFlowControl, kind: httpmsg.ReasonFlowControl, why: "connection window over 2^31-1"}
		}
		c.sendCond.Broadcast()
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.streams[fh.stream]
	if st == nil {
		if fh.stream > c.maxStream {
			return errProtocol("WINDOW_UPDATE on an idle stream")
		}
		return nil
	}
	if st.reset {
		return nil
	}
	if incr == 0 {
		c.resetLocked(st, codeProtocol, httpmsg.ReasonProtocolError)
		return nil
	}
	st.sendWindow += incr
	if st.sendWindow > maxWindow {
		c.resetLocked(st, codeFlowControl, httpmsg.ReasonFlowControl)
		return nil
	}
	c.sendCond.Broadcast()
	return nil
}

func (c *conn) onRST(fh frameHeader, p []byte) error {
	switch {
	case fh.length != 4:
		return errFrameSize("RST_STREAM payload not 4 bytes")
	case fh.stream == 0:
		return errProtocol("RST_STREAM on stream 0")
	}
	if err := c.control(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.streams[fh.stream]
	if st == nil {
		if fh.stream > c.maxStream {
			return errProtocol("RST_STREAM on an idle stream")
		}
		return nil
	}
	if !st.reset {
		st.reset, st.peerReset = true, true
		c.open--
	}
	st.closeLocked(errStreamReset)
	c.sendCond.Broadcast()
	return nil
}

func (c *conn) onPriority(fh frameHeader, p []byte) error {
	if fh.stream == 0 {
		return errProtocol("PRIORITY on stream 0")
	}
	if err := c.control(); err != nil {
		return err
	}
	if fh.length != 5 {
		c.streamError(fh.stream, codeFrameSize, httpmsg.ReasonProtocolError)
		return nil
	}
	if binary.BigEndian.Uint32(p)&0x7fffffff == fh.stream {
		c.streamError(fh.stream, codeProtocol, httpmsg.ReasonProtocolError)
	}
	return nil
}

// streamError resets stream id, open or not, and reports it.
func (c *conn) streamError(id, code uint32, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.streams[id]; st != nil {
		c.resetLocked(st, code, kind)
		return
	}
	c.out = appendRST(c.out, id, code)
	c.wakeWriterLocked()
	if kind != "" {
		c.refuse(0, kind)
	}
}

// resetLocked resets st (RST_STREAM with code), reported when kind is
// set; its handler's reads and writes fail from now on. c.mu is held.
func (c *conn) resetLocked(st *stream, code uint32, kind string) {
	if st.reset {
		return
	}
	st.reset = true
	c.open--
	c.out = appendRST(c.out, st.id, code)
	c.noteReset(st.id)
	c.wakeWriterLocked()
	st.closeLocked(errStreamReset)
	c.sendCond.Broadcast()
	if kind != "" {
		c.refuse(0, kind)
	}
}

func (c *conn) onData(fh frameHeader, p []byte) error {
	if fh.stream == 0 {
		return errProtocol("DATA on stream 0")
	}
	data := p
	if fh.flags&flagPadded != 0 {
		if len(p) == 0 || int(p[0]) >= len(p) {
			return errProtocol("DATA padding longer than the frame")
		}
		data = p[1 : len(p)-int(p[0])]
	}
	if len(p) == 0 && fh.flags&flagEndStream == 0 {
		if err := c.control(); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recvWindow -= int64(len(p))
	if c.recvWindow < 0 {
		return &connError{code: codeFlowControl, kind: httpmsg.ReasonFlowControl, why: "DATA past the connection window"}
	}
	st := c.streams[fh.stream]
	switch {
	case st == nil && fh.stream > c.maxStream:
		return errProtocol("DATA on an idle stream")
	case st == nil || st.reset || st.remoteClosed:
		c.creditLocked(nil, len(p))
		if st == nil && c.recentlyReset(fh.stream) {
			return nil
		}
		if st != nil && st.reset && !st.peerReset {
			return nil
		}
		if st != nil && st.peerReset {
			c.out = appendRST(c.out, fh.stream, codeStreamClosed)
			c.wakeWriterLocked()
			return nil
		}
		if st != nil {
			c.resetLocked(st, codeStreamClosed, httpmsg.ReasonProtocolError)
			return nil
		}
		c.out = appendRST(c.out, fh.stream, codeStreamClosed)
		c.noteReset(fh.stream)
		c.wakeWriterLocked()
		return nil
	}
	st.recvWindow -= int64(len(p))
	if st.recvWindow < 0 {
		c.resetLocked(st, codeFlowControl, httpmsg.ReasonFlowControl)
		return nil
	}
	return c.deliverLocked(st, fh, len(p)-len(data), data)
}

// deliverLocked hands DATA to the stream's body reader; pad is the
// frame's bytes besides data, given back to the windows at once.
func (c *conn) deliverLocked(st *stream, fh frameHeader, pad int, data []byte) error {
	st.received += int64(len(data))
	if st.cl >= 0 && st.received > st.cl {
		c.resetLocked(st, codeProtocol, httpmsg.ReasonInvalidContentLength)
		return nil
	}
	if pad > 0 {
		c.creditLocked(st, pad)
	}
	if st.bodyClosed {
		// the handler is done with the body: its bytes are dropped
		c.creditLocked(st, len(data))
	} else if len(data) > 0 {
		st.in = append(st.in, data...)
		st.cond.Broadcast()
	}
	if fh.flags&flagEndStream != 0 {
		return c.endRemoteLocked(st)
	}
	return nil
}

// endRemoteLocked is the client's END_STREAM on st.
func (c *conn) endRemoteLocked(st *stream) error {
	st.remoteClosed = true
	if st.cl >= 0 && st.received != st.cl {
		c.resetLocked(st, codeProtocol, httpmsg.ReasonInvalidContentLength)
		return nil
	}
	st.cond.Broadcast()
	return nil
}

// creditLocked gives n consumed bytes back to the client's windows (the
// stream's too when st is set), with a WINDOW_UPDATE once half a window
// is owed, so that a body read in small pieces costs few frames.
func (c *conn) creditLocked(st *stream, n int) {
	if n <= 0 {
		return
	}
	c.unacked += int64(n)
	if c.unacked >= connWindow/2 {
		c.out = appendWindowUpdate(c.out, 0, uint32(c.unacked))
		c.recvWindow += c.unacked
		c.unacked = 0
		c.wakeWriterLocked()
	}
	if st == nil || st.remoteClosed || st.reset {
		return
	}
	st.unacked += int64(n)
	if st.unacked >= streamWindow/4 {
		c.out = appendWindowUpdate(c.out, st.id, uint32(st.unacked))
		st.recvWindow += st.unacked
		st.unacked = 0
		c.wakeWriterLocked()
	}
}
