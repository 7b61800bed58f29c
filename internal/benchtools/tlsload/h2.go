package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// HTTP/2 frame types and flags the idle client needs (RFC 9113 §6).
const (
	h2Data, h2Headers, h2Settings, h2GoAway = 0, 1, 4, 7
	h2FlagEndStream, h2FlagAck              = 1, 1
)

// h2Preface is the client preface and an empty SETTINGS frame.
var h2Preface = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, h2Settings, 0, 0, 0, 0, 0)

// h2Get returns a HEADERS frame with a GET / of host on stream id: every
// field from the static table or a literal without indexing, so no HPACK
// dynamic table state builds up on either side.
func h2Get(id uint32, host string) []byte {
	block := []byte{0x82, 0x87, 0x84, 0x01, byte(len(host))} // :method GET, :scheme https, :path /, :authority literal
	block = append(block, host...)
	f := make([]byte, 9, 9+len(block))
	f[0], f[1], f[2] = byte(len(block)>>16), byte(len(block)>>8), byte(len(block))
	f[3], f[4] = h2Headers, 0x4|h2FlagEndStream // END_HEADERS, END_STREAM
	binary.BigEndian.PutUint32(f[5:], id)
	return append(f, block...)
}

// h2RoundTrip sends a GET / on stream id (after the preface when id is
// 1) and reads frames until its answer ends, acknowledging the server's
// SETTINGS. The answer must be a 200: its header block must start with
// the static table's :status 200 (0x88), as every server under test
// encodes it.
func h2RoundTrip(c net.Conn, id uint32, host string, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	req := h2Get(id, host)
	if id == 1 {
		req = append(append([]byte(nil), h2Preface...), req...)
	}
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("writing request: %w", err)
	}
	var hdr [9]byte
	payload := make([]byte, 0, 256)
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return fmt.Errorf("reading a frame: %w", err)
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		typ, flags, stream := hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:])&0x7fffffff
		if n > 1<<20 {
			return fmt.Errorf("frame of %d bytes", n)
		}
		payload = append(payload[:0], make([]byte, n)...)
		if _, err := io.ReadFull(c, payload); err != nil {
			return fmt.Errorf("reading a frame: %w", err)
		}
		switch {
		case typ == h2Settings && flags&h2FlagAck == 0:
			if _, err := c.Write([]byte{0, 0, 0, h2Settings, h2FlagAck, 0, 0, 0, 0}); err != nil {
				return fmt.Errorf("acknowledging SETTINGS: %w", err)
			}
		case typ == h2GoAway:
			return errors.New("server sent GOAWAY")
		case typ == h2Headers && stream == id && (n == 0 || payload[0] != 0x88):
			return errors.New("answer not a 200")
		}
		if stream == id && (typ == h2Data || typ == h2Headers) && flags&h2FlagEndStream != 0 {
			return nil
		}
	}
}
