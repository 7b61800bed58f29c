package proxyproto

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

const (
	v2FixedLen = 16
	cmdLocal   = 0x0
	cmdProxy   = 0x1

	famUnspec = 0x0
	famInet   = 0x1
	famInet6  = 0x2
	famUnix   = 0x3

	addrLenInet  = 12
	addrLenInet6 = 36
	addrLenUnix  = 216
)

// parseV2 parses a v2 header: the 12-byte signature, version and command,
// family and transport, a 2-byte length, then that many bytes of
// addresses and TLVs (spec §2.2).
func parseV2(b []byte) (Header, int, error) {
	if len(b) > 12 {
		if v := b[12] >> 4; v != 2 {
			return Header{}, 0, malformed("v2 version %d", v)
		}
		if c := b[12] & 0xf; c != cmdLocal && c != cmdProxy {
			return Header{}, 0, malformed("v2 command %d", c)
		}
	}
	if len(b) > 13 && b[12]&0xf == cmdProxy && !knownFamily(b[13]) {
		return Header{}, 0, malformed("v2 family and transport %#02x", b[13])
	}
	if len(b) < v2FixedLen {
		return Header{}, v2FixedLen, ErrIncomplete
	}
	n := v2FixedLen + int(binary.BigEndian.Uint16(b[14:16]))
	if len(b) < n {
		return Header{}, n, ErrIncomplete
	}
	h := Header{Version: 2, Local: true}
	if b[12]&0xf == cmdLocal {
		// The receiver uses the real endpoints and ignores the block,
		// family included (spec §2.2).
		return h, n, nil
	}
	block := b[v2FixedLen:n]
	tlvs, err := h.addresses(b[13], block)
	if err != nil {
		return Header{}, 0, err
	}
	if h.TLVs, err = parseTLVs(b[:n], v2FixedLen+len(block)-len(tlvs)); err != nil {
		return Header{}, 0, err
	}
	return h, n, nil
}

// knownFamily reports whether fam is one of the seven family and
// transport bytes the specification defines; others must be refused.
func knownFamily(fam byte) bool {
	switch fam {
	case 0x00, 0x11, 0x12, 0x21, 0x22, 0x31, 0x32:
		return true
	}
	return false
}

// addresses reads the address block of a PROXY header of family fam and
// returns what follows it (the TLVs). UNSPEC and UNIX leave h Local:
// there is no IP address to use, and an UNSPEC block is ignored whole.
func (h *Header) addresses(fam byte, block []byte) ([]byte, error) {
	need := 0
	switch fam >> 4 {
	case famUnspec:
		return nil, nil
	case famInet:
		need = addrLenInet
	case famInet6:
		need = addrLenInet6
	case famUnix:
		need = addrLenUnix
	}
	if len(block) < need {
		return nil, malformed("v2 address block of %d bytes, family %#02x needs %d", len(block), fam, need)
	}
	switch fam >> 4 {
	case famInet:
		h.Source = netip.AddrPortFrom(netip.AddrFrom4([4]byte(block[0:4])), binary.BigEndian.Uint16(block[8:]))
		h.Dest = netip.AddrPortFrom(netip.AddrFrom4([4]byte(block[4:8])), binary.BigEndian.Uint16(block[10:]))
		h.Local = false
	case famInet6:
		h.Source = netip.AddrPortFrom(netip.AddrFrom16([16]byte(block[0:16])), binary.BigEndian.Uint16(block[32:]))
		h.Dest = netip.AddrPortFrom(netip.AddrFrom16([16]byte(block[16:32])), binary.BigEndian.Uint16(block[34:]))
		h.Local = false
	}
	return block[need:], nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parseTLVs parses the TLVs of header hdr from offset off to its end,
// checking a CRC32C TLV against the header. NOOP TLVs are checked and
// left out.
func parseTLVs(hdr []byte, off int) ([]TLV, error) {
	count := 0
	for i := off; i < len(hdr); {
		if len(hdr)-i < 3 {
			return nil, malformed("truncated TLV at byte %d", i)
		}
		end := i + 3 + int(binary.BigEndian.Uint16(hdr[i+1:]))
		if end > len(hdr) {
			return nil, malformed("TLV %#02x at byte %d runs past the header", hdr[i], i)
		}
		if err := checkTLV(hdr, i, end); err != nil {
			return nil, err
		}
		if hdr[i] != TypeNoop {
			count++
		}
		i = end
	}
	if count == 0 {
		return nil, nil
	}
	if count > MaxTLVs {
		return nil, malformed("%d TLVs, more than %d", count, MaxTLVs)
	}
	tlvs := make([]TLV, 0, count)
	for i := off; i < len(hdr); {
		end := i + 3 + int(binary.BigEndian.Uint16(hdr[i+1:]))
		if hdr[i] != TypeNoop {
			tlvs = append(tlvs, TLV{Type: hdr[i], Value: hdr[i+3 : end : end]})
		}
		i = end
	}
	return tlvs, nil
}

// checkTLV checks the TLV at hdr[i:end] where the specification says
// what it holds and the receiver must check it.
func checkTLV(hdr []byte, i, end int) error {
	if hdr[i] != TypeCRC32C {
		return nil
	}
	if end-i != 3+4 {
		return malformed("CRC32C TLV of %d bytes", end-i-3)
	}
	// The checksum covers the whole header with its own value zeroed.
	var zero [4]byte
	sum := crc32.Update(0, castagnoli, hdr[:i+3])
	sum = crc32.Update(sum, castagnoli, zero[:])
	sum = crc32.Update(sum, castagnoli, hdr[end:])
	if got := binary.BigEndian.Uint32(hdr[i+3:]); got != sum {
		return malformed("CRC32C %#08x, header sums to %#08x", got, sum)
	}
	return nil
}
