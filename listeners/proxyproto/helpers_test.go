package proxyproto

import (
	"encoding/binary"
	"hash/crc32"
	"net"
	"net/netip"
	"testing"

	pp "github.com/pires/go-proxyproto"
)

// format writes a header with go-proxyproto: version 1 or 2, from src to
// dst ("ip:port"), with tlvs.
func format(t testing.TB, version byte, src, dst string, tlvs ...pp.TLV) []byte {
	t.Helper()
	h := pp.HeaderProxyFromAddrs(version, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(src)),
		net.TCPAddrFromAddrPort(netip.MustParseAddrPort(dst)))
	if err := h.SetTLVs(tlvs); err != nil {
		t.Fatal(err)
	}
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// formatLocal writes a v2 LOCAL header with go-proxyproto.
func formatLocal(t testing.TB) []byte {
	t.Helper()
	b, err := (&pp.Header{Version: 2, Command: pp.LOCAL, TransportProtocol: pp.UNSPEC}).Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// v2 builds a v2 header by hand: version/command byte, family byte, and
// the block after the length.
func v2(verCmd, fam byte, block []byte) []byte {
	b := append([]byte(nil), sigV2...)
	b = append(b, verCmd, fam)
	b = binary.BigEndian.AppendUint16(b, uint16(len(block)))
	return append(b, block...)
}

// tlv encodes one TLV.
func tlv(typ byte, value []byte) []byte {
	b := binary.BigEndian.AppendUint16([]byte{typ}, uint16(len(value)))
	return append(b, value...)
}

// inet4 is an INET address block for 192.0.2.1:1000 -> 198.51.100.2:443.
func inet4() []byte {
	return []byte{192, 0, 2, 1, 198, 51, 100, 2, 0x03, 0xe8, 0x01, 0xbb}
}

// withCRC appends a CRC32C TLV to a v2 header with an INET4 block and
// extra TLVs, computed over the whole header the simple way; bad flips it.
func withCRC(extra []byte, bad bool) []byte {
	block := append(append(inet4(), extra...), tlv(TypeCRC32C, make([]byte, 4))...)
	h := v2(0x21, 0x11, block)
	sum := crc32.Checksum(h, crc32.MakeTable(crc32.Castagnoli))
	if bad {
		sum ^= 1
	}
	binary.BigEndian.PutUint32(h[len(h)-4:], sum)
	return h
}
