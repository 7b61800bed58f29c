package proxyproto

import (
	"bytes"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	pp "github.com/pires/go-proxyproto"
)

var (
	src4 = netip.MustParseAddrPort("192.0.2.1:56324")
	dst4 = netip.MustParseAddrPort("198.51.100.2:443")
	src6 = netip.MustParseAddrPort("[2001:db8::1]:56324")
	dst6 = netip.MustParseAddrPort("[2001:db8:ffff::2]:8443")
)

func TestParse(t *testing.T) {
	t.Parallel()
	maxV1 := "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe 65535 65535\r\n"
	ffff := netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")
	tlvs := []pp.TLV{
		{Type: pp.PP2_TYPE_ALPN, Value: []byte("h2")},
		{Type: pp.PP2_TYPE_NOOP, Value: []byte{0, 0, 0}},
		{Type: pp.PP2_TYPE_AUTHORITY, Value: []byte("api.example.com")},
		{Type: 0xe0, Value: []byte{}},
	}
	unixBlock := make([]byte, addrLenUnix)
	copy(unixBlock, "/run/src.sock")
	tests := []struct {
		desc string
		in   []byte
		want Header
	}{
		{desc: "v1 TCP4", in: format(t, 1, src4.String(), dst4.String()), want: Header{Version: 1, Source: src4, Dest: dst4}},
		{desc: "v1 TCP6", in: format(t, 1, src6.String(), dst6.String()), want: Header{Version: 1, Source: src6, Dest: dst6}},
		{desc: "v1 TCP6, longest", in: []byte(maxV1), want: Header{Version: 1, Source: netip.AddrPortFrom(ffff, 65535), Dest: netip.AddrPortFrom(ffff.Prev(), 65535)}},
		{desc: "v1 TCP6, IPv4-mapped", in: []byte("PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n"), want: Header{Version: 1, Source: netip.MustParseAddrPort("[::ffff:192.0.2.1]:1"), Dest: netip.MustParseAddrPort("[::1]:2")}},
		{desc: "v1 port zero, leading zeros", in: []byte("PROXY TCP4 1.2.3.4 5.6.7.8 0 00443\r\n"), want: Header{Version: 1, Source: netip.MustParseAddrPort("1.2.3.4:0"), Dest: netip.MustParseAddrPort("5.6.7.8:443")}},
		{desc: "v1 UNKNOWN", in: []byte("PROXY UNKNOWN\r\n"), want: Header{Version: 1, Local: true}},
		{desc: "v1 UNKNOWN with addresses", in: []byte("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n"), want: Header{Version: 1, Local: true}},
		{desc: "v2 IPv4", in: format(t, 2, src4.String(), dst4.String()), want: Header{Version: 2, Source: src4, Dest: dst4}},
		{desc: "v2 IPv6", in: format(t, 2, src6.String(), dst6.String()), want: Header{Version: 2, Source: src6, Dest: dst6}},
		{desc: "v2 LOCAL", in: formatLocal(t), want: Header{Version: 2, Local: true}},
		{desc: "v2 LOCAL, unknown family, junk", in: v2(0x20, 0x77, []byte("junk")), want: Header{Version: 2, Local: true}},
		{desc: "v2 LOCAL, INET block", in: v2(0x20, 0x11, inet4()), want: Header{Version: 2, Local: true}},
		{desc: "v2 PROXY UNSPEC", in: v2(0x21, 0x00, []byte{1, 2, 3}), want: Header{Version: 2, Local: true}},
		{desc: "v2 UDP over IPv4", in: v2(0x21, 0x12, inet4()), want: Header{Version: 2, Source: netip.MustParseAddrPort("192.0.2.1:1000"), Dest: dst4}},
		{desc: "v2 UNIX with a TLV", in: v2(0x21, 0x31, append(unixBlock, tlv(TypeUniqueID, []byte("id-1"))...)),
			want: Header{Version: 2, Local: true, TLVs: []TLV{{Type: TypeUniqueID, Value: []byte("id-1")}}}},
		{desc: "v2 TLVs", in: format(t, 2, src4.String(), dst4.String(), tlvs...),
			want: Header{Version: 2, Source: src4, Dest: dst4, TLVs: []TLV{{TypeALPN, []byte("h2")}, {TypeAuthority, []byte("api.example.com")}, {0xe0, []byte{}}}}},
		{desc: "v2 only NOOP", in: v2(0x21, 0x11, append(inet4(), tlv(TypeNoop, nil)...)), want: Header{Version: 2, Source: netip.MustParseAddrPort("192.0.2.1:1000"), Dest: dst4}},
		{desc: "v2 CRC32C", in: withCRC(tlv(TypeALPN, []byte("h2")), false),
			want: Header{Version: 2, Source: netip.MustParseAddrPort("192.0.2.1:1000"), Dest: dst4, TLVs: []TLV{{TypeALPN, []byte("h2")}, {TypeCRC32C, nil}}}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			in := append(bytes.Clone(tt.in), "GET / HTTP/1.1\r\n"...)
			h, n, err := Parse(in)
			if err != nil || n != len(tt.in) {
				t.Fatalf("Parse = %d, %v; want %d, nil", n, err, len(tt.in))
			}
			if tt.want.TLVs != nil && h.TLVs != nil && h.TLVs[len(h.TLVs)-1].Type == TypeCRC32C {
				tt.want.TLVs[len(tt.want.TLVs)-1].Value = h.TLVs[len(h.TLVs)-1].Value // the sum itself
			}
			if !reflect.DeepEqual(h, tt.want) {
				t.Errorf("Parse = %+v\nwant    %+v", h, tt.want)
			}
			// Every prefix is incomplete, with a need that does not overshoot.
			for i := range len(tt.in) {
				_, need, err := Parse(tt.in[:i])
				if err != ErrIncomplete || need <= i || need > len(tt.in) {
					t.Fatalf("Parse(first %d of %d bytes) = %d, %v; want ErrIncomplete", i, len(tt.in), need, err)
				}
			}
		})
	}
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	ssl := []byte{ClientSSL | ClientCertConn, 0, 0, 0, 0}
	ssl = append(ssl, tlv(SubtypeSSLVersion, []byte("TLSv1.3"))...)
	ssl = append(ssl, tlv(SubtypeSSLCN, []byte("client.example"))...)
	ssl = append(ssl, tlv(SubtypeSSLCipher, []byte("TLS_AES_128_GCM_SHA256"))...)
	ssl = append(ssl, tlv(SubtypeSSLSigAlg, []byte("SHA256"))...)
	ssl = append(ssl, tlv(SubtypeSSLKeyAlg, []byte("RSA2048"))...)
	in := format(t, 2, src4.String(), dst4.String(),
		pp.TLV{Type: pp.PP2_TYPE_ALPN, Value: []byte("h2")},
		pp.TLV{Type: pp.PP2_TYPE_AUTHORITY, Value: []byte("api.example.com")},
		pp.TLV{Type: pp.PP2_TYPE_SSL, Value: ssl})
	h, _, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	if h.ALPN() != "h2" || h.Authority() != "api.example.com" {
		t.Errorf("ALPN %q, Authority %q", h.ALPN(), h.Authority())
	}
	got, ok := h.SSL()
	want := SSL{Client: ClientSSL | ClientCertConn, Version: "TLSv1.3", CN: "client.example", Cipher: "TLS_AES_128_GCM_SHA256", SigAlg: "SHA256", KeyAlg: "RSA2048"}
	if !ok || got != want {
		t.Errorf("SSL = %+v, %v; want %+v", got, ok, want)
	}
	// go-proxyproto's tlvparse reads the same TLV the same way.
	theirs, ok := theirSSL(t, in)
	if !ok || theirs.Verified() != (got.Verify == 0) || !theirs.ClientSSL() || !theirs.ClientCertConn() {
		t.Errorf("tlvparse disagrees: %+v", theirs)
	}
	if v, _ := theirs.SSLVersion(); v != got.Version {
		t.Errorf("tlvparse version %q, ours %q", v, got.Version)
	}
	if cn, _ := theirs.ClientCN(); cn != got.CN {
		t.Errorf("tlvparse CN %q, ours %q", cn, got.CN)
	}
	for _, bad := range [][]byte{{1, 0, 0}, append([]byte{1, 0, 0, 0, 0}, SubtypeSSLCN, 0, 9, 'x')} {
		h := Header{TLVs: []TLV{{TypeSSL, bad}}}
		if s, ok := h.SSL(); ok {
			t.Errorf("SSL(% x) = %+v, want not ok", bad, s)
		}
	}
	var empty Header
	if _, ok := empty.SSL(); ok || empty.ALPN() != "" || empty.Authority() != "" {
		t.Errorf("a header without TLVs reports some")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	many := inet4()
	for range MaxTLVs + 1 {
		many = append(many, tlv(0xe1, nil)...)
	}
	tests := []struct {
		desc string
		in   string
		want error
		says string
	}{
		{desc: "HTTP request", in: "GET / HTTP/1.1\r\n", want: ErrNotProxy},
		{desc: "TLS hello", in: "\x16\x03\x01\x02\x00\x01", want: ErrNotProxy},
		{desc: "v2 signature broken", in: "\r\n\r\n\x00\r\nQUIX\n", want: ErrNotProxy},
		{desc: "lower-case proxy", in: "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n", want: ErrNotProxy},
		{desc: "no space after PROXY", in: "PROXYTCP4", want: ErrMalformed, says: "no space"},
		{desc: "v1 without CR", in: "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", want: ErrMalformed, says: "CRLF"},
		{desc: "v1 no LF in 107 bytes", in: "PROXY UNKNOWN " + strings.Repeat("x", 100), want: ErrTooLong},
		{desc: "v1 unknown protocol", in: "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n", want: ErrMalformed, says: "protocol"},
		{desc: "v1 empty", in: "PROXY \r\n", want: ErrMalformed, says: "protocol"},
		{desc: "v1 five fields", in: "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", want: ErrMalformed, says: "6 fields"},
		{desc: "v1 seven fields", in: "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n", want: ErrMalformed, says: "6 fields"},
		{desc: "v1 double space", in: "PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n", want: ErrMalformed, says: "6 fields"},
		{desc: "v1 trailing space", in: "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n", want: ErrMalformed, says: "6 fields"},
		{desc: "v1 TCP4 with IPv6", in: "PROXY TCP4 ::1 5.6.7.8 1 2\r\n", want: ErrMalformed, says: "address"},
		{desc: "v1 TCP6 with IPv4", in: "PROXY TCP6 1.2.3.4 ::1 1 2\r\n", want: ErrMalformed, says: "address"},
		{desc: "v1 zone", in: "PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n", want: ErrMalformed, says: "address"},
		{desc: "v1 octet with leading zero", in: "PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n", want: ErrMalformed, says: "address"},
		{desc: "v1 port too big", in: "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n", want: ErrMalformed, says: "port"},
		{desc: "v1 port with sign", in: "PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n", want: ErrMalformed, says: "port"},
		{desc: "v1 port six digits", in: "PROXY TCP4 1.2.3.4 5.6.7.8 000001 2\r\n", want: ErrMalformed, says: "port"},
		{desc: "v2 version 1", in: string(v2(0x11, 0x11, inet4())), want: ErrMalformed, says: "version 1"},
		{desc: "v2 command 2", in: string(v2(0x22, 0x11, inet4())), want: ErrMalformed, says: "command 2"},
		{desc: "v2 family 0x13", in: string(v2(0x21, 0x13, inet4())), want: ErrMalformed, says: "family"},
		{desc: "v2 family 0x10", in: string(v2(0x21, 0x10, inet4())), want: ErrMalformed, says: "family"},
		{desc: "v2 family 0x41", in: string(v2(0x21, 0x41, inet4())), want: ErrMalformed, says: "family"},
		{desc: "v2 INET block short", in: string(v2(0x21, 0x11, inet4()[:11])), want: ErrMalformed, says: "needs 12"},
		{desc: "v2 INET6 block short", in: string(v2(0x21, 0x21, make([]byte, 35))), want: ErrMalformed, says: "needs 36"},
		{desc: "v2 UNIX block short", in: string(v2(0x21, 0x31, make([]byte, 215))), want: ErrMalformed, says: "needs 216"},
		{desc: "v2 TLV header cut", in: string(v2(0x21, 0x11, append(inet4(), 1, 0))), want: ErrMalformed, says: "truncated TLV"},
		{desc: "v2 TLV past the end", in: string(v2(0x21, 0x11, append(inet4(), 1, 0, 5, 'h', '2'))), want: ErrMalformed, says: "runs past"},
		{desc: "v2 bad CRC32C", in: string(withCRC(nil, true)), want: ErrMalformed, says: "CRC32C"},
		{desc: "v2 CRC32C of 3 bytes", in: string(v2(0x21, 0x11, append(inet4(), tlv(TypeCRC32C, []byte{1, 2, 3})...))), want: ErrMalformed, says: "CRC32C TLV of 3"},
		{desc: "v2 too many TLVs", in: string(v2(0x21, 0x11, many)), want: ErrMalformed, says: "TLVs, more than"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, n, err := Parse([]byte(tt.in))
			if !errors.Is(err, tt.want) || n != 0 {
				t.Fatalf("Parse = %d, %v; want 0, %v", n, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
		})
	}
}

// Errors show as soon as the bytes that make them are there.
func TestParseFailsEarly(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"PROXYX", "G", "\r\n\r\n\x00\r\nQUIT\n\x11", "\r\n\r\n\x00\r\nQUIT\n\x21\x13"} {
		if _, _, err := Parse([]byte(in)); err == ErrIncomplete || err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, err)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	tests := []struct {
		desc string
		in   []byte
		max  float64
	}{
		{desc: "v1", in: format(t, 1, src6.String(), dst6.String()), max: 0},
		{desc: "v2", in: format(t, 2, src6.String(), dst6.String()), max: 0},
		{desc: "v2 incomplete", in: format(t, 2, src6.String(), dst6.String())[:20], max: 0},
		{desc: "v2 TLVs", in: format(t, 2, src4.String(), dst4.String(), pp.TLV{Type: 1, Value: []byte("h2")}, pp.TLV{Type: 2, Value: []byte("a")}), max: 1},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, func() { Parse(tt.in) }); got > tt.max {
				t.Errorf("Parse allocates %v times, want at most %v", got, tt.max)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for _, bc := range []struct {
		desc string
		in   []byte
	}{
		{desc: "v1 TCP4", in: format(b, 1, src4.String(), dst4.String())},
		{desc: "v1 TCP6", in: format(b, 1, src6.String(), dst6.String())},
		{desc: "v2 IPv6", in: format(b, 2, src6.String(), dst6.String())},
		{desc: "v2 TLVs", in: format(b, 2, src4.String(), dst4.String(), pp.TLV{Type: 1, Value: []byte("h2")}, pp.TLV{Type: 2, Value: []byte("api.example.com")})},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Parse(bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
