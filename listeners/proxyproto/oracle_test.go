package proxyproto

import (
	"bufio"
	"bytes"
	"testing"

	pp "github.com/pires/go-proxyproto"
	"github.com/pires/go-proxyproto/tlvparse"
)

// theirs parses exactly b with go-proxyproto.
func theirs(b []byte) (*pp.Header, error) {
	return pp.Read(bufio.NewReaderSize(bytes.NewReader(b), len(b)+16))
}

// theirSSL returns what go-proxyproto's tlvparse makes of the SSL TLV in
// header in.
func theirSSL(t *testing.T, in []byte) (tlvparse.PP2SSL, bool) {
	t.Helper()
	h, err := theirs(in)
	if err != nil {
		t.Fatalf("go-proxyproto: %v", err)
	}
	tlvs, err := h.TLVs()
	if err != nil {
		t.Fatalf("go-proxyproto TLVs: %v", err)
	}
	return tlvparse.FindSSL(tlvs)
}

// TestWhereGoProxyprotoDiffers pins the cases doc.go gives for not
// parsing with go-proxyproto: it accepts each of these headers, and the
// specification (with Parse) does not, or the other way round.
func TestWhereGoProxyprotoDiffers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc     string
		in       []byte
		oursOK   bool
		theirsOK bool
	}{
		{desc: "no space after PROXY", in: []byte("PROXYX TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), theirsOK: true},
		{desc: "extra v1 field", in: []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n"), theirsOK: true},
		{desc: "port with a sign", in: []byte("PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n"), theirsOK: true},
		{desc: "IPv6 zone", in: []byte("PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n"), theirsOK: true},
		{desc: "v2 family 0x10", in: v2(0x21, 0x10, inet4()), theirsOK: true},
		{desc: "v2 wrong CRC32C", in: withCRC(nil, true), theirsOK: true},
		{desc: "v2 LOCAL, unknown family", in: v2(0x20, 0x77, []byte("junk")), oursOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, _, err := Parse(tt.in)
			if (err == nil) != tt.oursOK {
				t.Errorf("Parse error = %v, want ok %v", err, tt.oursOK)
			}
			if _, err := theirs(tt.in); (err == nil) != tt.theirsOK {
				t.Errorf("go-proxyproto error = %v, want ok %v", err, tt.theirsOK)
			}
		})
	}
}
