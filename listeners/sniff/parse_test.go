package sniff

import (
	"bytes"
	"crypto/tls"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// realConfigs are crypto/tls client settings whose hellos the tests parse.
var realConfigs = []struct {
	desc string
	cfg  *tls.Config
	want Hello
	min  int // the hello is at least this long
}{
	{
		desc: "SNI and ALPN h2, http/1.1",
		cfg:  &tls.Config{ServerName: "Example.COM", NextProtos: []string{"h2", "http/1.1"}},
		want: Hello{SNI: "example.com", ALPN: []string{"h2", "http/1.1"}, Version: tls.VersionTLS13},
	},
	{
		desc: "no SNI",
		cfg:  &tls.Config{InsecureSkipVerify: true},
		want: Hello{Version: tls.VersionTLS13},
	},
	{
		desc: "IP address sends no SNI",
		cfg:  &tls.Config{ServerName: "192.0.2.1", NextProtos: []string{"http/1.1"}},
		want: Hello{ALPN: []string{"http/1.1"}, Version: tls.VersionTLS13},
	},
	{
		desc: "trailing dot",
		cfg:  &tls.Config{ServerName: "api.example.com."},
		want: Hello{SNI: "api.example.com", Version: tls.VersionTLS13},
	},
	{
		desc: "TLS 1.2 only",
		cfg:  &tls.Config{ServerName: "old.example", MaxVersion: tls.VersionTLS12},
		want: Hello{SNI: "old.example", Version: tls.VersionTLS12},
	},
	{
		desc: "X25519MLKEM768 key share",
		cfg:  &tls.Config{ServerName: "pq.example", CurvePreferences: []tls.CurveID{tls.X25519MLKEM768}, NextProtos: []string{"h2"}},
		want: Hello{SNI: "pq.example", ALPN: []string{"h2"}, Version: tls.VersionTLS13},
		min:  1200,
	},
	{
		desc: "acme-tls/1",
		cfg:  &tls.Config{ServerName: "new.example", NextProtos: []string{"acme-tls/1"}},
		want: Hello{SNI: "new.example", ALPN: []string{"acme-tls/1"}, Version: tls.VersionTLS13},
	},
}

func TestParseRealHellos(t *testing.T) {
	t.Parallel()
	for _, tt := range realConfigs {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			raw := captureHello(t, tt.cfg)
			if len(raw) < tt.min {
				t.Fatalf("hello is %d bytes, want at least %d", len(raw), tt.min)
			}
			// Early data or anything else after the hello is not the hello's.
			for _, in := range [][]byte{raw, append(bytes.Clone(raw), 23, 3, 3, 0, 1, 'x')} {
				h, n, err := Parse(in)
				if err != nil || n != len(raw) {
					t.Fatalf("Parse = %d, %v; want %d, nil", n, err, len(raw))
				}
				if !reflect.DeepEqual(h, tt.want) {
					t.Errorf("Parse = %+v, want %+v", h, tt.want)
				}
			}
		})
	}
}

func TestParseFragmented(t *testing.T) {
	t.Parallel()
	raw := captureHello(t, realConfigs[5].cfg)
	want, _, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	ones := make([]int, len(raw))
	for i := range ones {
		ones[i] = 1
	}
	tests := []struct {
		desc  string
		sizes []int
	}{
		{desc: "header split", sizes: []int{1}},
		{desc: "two halves", sizes: []int{len(raw) / 2}},
		{desc: "three records", sizes: []int{3, 700}},
		{desc: "header, then body", sizes: []int{4}},
		{desc: "one byte each", sizes: ones},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			in := fragment(raw, tt.sizes...)
			h, n, err := Parse(in)
			if err != nil || n != len(in) {
				t.Fatalf("Parse = %d, %v; want %d, nil", n, err, len(in))
			}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("Parse = %+v, want %+v", h, want)
			}
		})
	}
}

// Every prefix of a hello is incomplete, with a need that is a lower
// bound of the whole, and exact for one record once its header is there.
func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	raw := captureHello(t, realConfigs[0].cfg)
	for _, in := range [][]byte{raw, fragment(raw, 1), fragment(raw, 2, 100), fragment(raw, 3, 4, 5)} {
		single := len(in) == len(raw)
		for i := range len(in) {
			_, n, err := Parse(in[:i])
			if !errors.Is(err, ErrIncomplete) {
				t.Fatalf("Parse(first %d of %d bytes) error = %v, want ErrIncomplete", i, len(in), err)
			}
			if n <= i || n > len(in) {
				t.Fatalf("Parse(first %d of %d bytes) needs %d", i, len(in), n)
			}
			if single && i >= recordHeaderLen && n != len(in) {
				t.Fatalf("Parse(first %d bytes of one record) needs %d, want %d", i, n, len(in))
			}
		}
	}
}

func TestParseNotTLS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc string
		in   string
	}{
		{desc: "HTTP/1.1 request", in: "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
		{desc: "one byte", in: "G"},
		{desc: "HTTP/2 preface", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
		{desc: "SSLv2 hello", in: "\x80\x2e\x01\x03\x01\x00\x15"},
		{desc: "alert record", in: "\x15\x03\x01\x00\x02\x02\x28"},
		{desc: "handshake type, major version 2", in: "\x16\x02"},
		{desc: "PROXY header", in: "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, n, err := Parse([]byte(tt.in))
			if err != ErrNotTLS || n != 0 {
				t.Errorf("Parse = %d, %v; want 0, ErrNotTLS", n, err)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	good := buildMsg(helloSpec{exts: []ext{sniExt("a.example")}})
	tests := []struct {
		desc string
		in   []byte
		want string // in the error
	}{
		{desc: "record version 3.0", in: appendRecord(nil, 22, 0x0300, good), want: "record version"},
		{desc: "record version 3.5", in: appendRecord(nil, 22, 0x0305, good), want: "record version"},
		{desc: "empty record", in: appendRecord(nil, 22, 0x0301, nil), want: "empty handshake record"},
		{desc: "record over 2^14", in: []byte{22, 3, 1, 0x40, 0x01}, want: "exceeds 2^14"},
		{desc: "server hello", in: appendRecord(nil, 22, 0x0301, append([]byte{2}, good[1:]...)), want: "type 2"},
		{desc: "change cipher spec between fragments",
			in:   appendRecord(appendRecord(appendRecord(nil, 22, 0x0301, good[:10]), 20, 0x0303, []byte{1}), 22, 0x0301, good[10:]),
			want: "record of type 20"},
		{desc: "second record with version 2.1",
			in:   appendRecord(appendRecord(nil, 22, 0x0301, good[:10]), 22, 0x0201, good[10:]),
			want: "version major 2"},
		{desc: "bytes after the hello in its record", in: appendRecord(nil, 22, 0x0301, append(bytes.Clone(good), 1, 2)), want: "after the ClientHello"},
		{desc: "empty body", in: appendRecord(nil, 22, 0x0301, []byte{1, 0, 0, 0}), want: "short version"},
		{desc: "long session id", in: build(helloSpec{sessionID: make([]byte, 33)}), want: "legacy_session_id"},
		{desc: "odd cipher suites", in: build(helloSpec{suites: []byte{1, 2, 3}}), want: "cipher_suites"},
		{desc: "no cipher suites", in: build(helloSpec{suites: []byte{}}), want: "cipher_suites"},
		{desc: "no compression method", in: build(helloSpec{comp: []byte{}}), want: "compression"},
		{desc: "extensions length too short", in: build(helloSpec{exts: []ext{sniExt("a")}, extsLen: 3}), want: "extensions length"},
		{desc: "truncated extension", in: build(helloSpec{exts: []ext{{typ: 0xff01}}, extsLen: 3}), want: "extensions length"},
		{desc: "extension header cut", in: build(helloSpec{exts: []ext{{typ: 5, data: []byte{1}}}, extsLen: 6}), want: "extensions length"},
		{desc: "duplicate extension", in: build(helloSpec{exts: []ext{{typ: 5}, {typ: 10}, {typ: 5}}}), want: "duplicate extension 5"},
		{desc: "duplicate server_name", in: build(helloSpec{exts: []ext{sniExt("a"), sniExt("b")}}), want: "duplicate extension 0"},
		{desc: "server_name of type 1", in: build(helloSpec{exts: []ext{{extServerName, []byte{0, 4, 1, 0, 1, 'a'}}}}), want: "not host_name"},
		{desc: "two server names", in: build(helloSpec{exts: []ext{sniExt("a", "b")}}), want: "more than one"},
		{desc: "empty server name", in: build(helloSpec{exts: []ext{sniExt("")}}), want: "empty server_name"},
		{desc: "server name a dot", in: build(helloSpec{exts: []ext{sniExt(".")}}), want: "empty server_name"},
		{desc: "server name with a space", in: build(helloSpec{exts: []ext{sniExt("a b")}}), want: "byte 0x20"},
		{desc: "server name with a NUL", in: build(helloSpec{exts: []ext{sniExt("a\x00.example")}}), want: "byte 0x0"},
		{desc: "server name UTF-8", in: build(helloSpec{exts: []ext{sniExt("bücher.example")}}), want: "byte 0xc3"},
		{desc: "server_name list cut", in: build(helloSpec{exts: []ext{{extServerName, []byte{0, 9, 0, 0, 1, 'a'}}}}), want: "server_name list length"},
		{desc: "server_name entry cut", in: build(helloSpec{exts: []ext{{extServerName, []byte{0, 3, 0, 0, 5}}}}), want: "truncated server_name"},
		{desc: "server_name trailing bytes", in: build(helloSpec{exts: []ext{{extServerName, []byte{0, 4, 0, 0, 1, 'a', 9}}}}), want: "server_name list length"},
		{desc: "empty ALPN list", in: build(helloSpec{exts: []ext{alpnExt()}}), want: "ALPN list"},
		{desc: "empty ALPN protocol", in: build(helloSpec{exts: []ext{alpnExt("h2", "")}}), want: "empty or truncated ALPN"},
		{desc: "ALPN protocol cut", in: build(helloSpec{exts: []ext{{extALPN, []byte{0, 2, 5, 'h'}}}}), want: "empty or truncated ALPN"},
		{desc: "ALPN trailing bytes", in: build(helloSpec{exts: []ext{{extALPN, []byte{0, 3, 2, 'h', '2', 0}}}}), want: "ALPN list"},
		{desc: "odd supported_versions", in: build(helloSpec{exts: []ext{{extSupportedVersions, []byte{3, 3, 4, 3}}}}), want: "supported_versions"},
		{desc: "empty supported_versions", in: build(helloSpec{exts: []ext{{extSupportedVersions, []byte{0}}}}), want: "supported_versions"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, n, err := Parse(tt.in)
			if !errors.Is(err, ErrMalformed) || n != 0 {
				t.Fatalf("Parse = %d, %v; want 0 and an ErrMalformed error", n, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	big := buildMsg(helloSpec{exts: []ext{{typ: 0xff00, data: make([]byte, MaxHelloBytes)}}})
	twenties := make([]int, 1000)
	for i := range twenties {
		twenties[i] = 20
	}
	tests := []struct {
		desc string
		in   []byte
	}{
		{desc: "declared length, header only", in: []byte{22, 3, 1, 0x40, 0, 1, 0, 0x40, 0}},
		{desc: "declared length over two records", in: appendRecord(appendRecord(nil, 22, 0x0301, []byte{1, 0, 0x3f}), 22, 0x0301, []byte{0xf8})},
		{desc: "records past the bound", in: fragment(appendRecord(nil, 22, 0x0301, big[:16000]), 1000)},
		{desc: "small fragments add up", in: fragment(build(helloSpec{exts: []ext{{typ: 1, data: make([]byte, 13200)}}}), twenties...)},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			_, n, err := Parse(tt.in)
			if err != ErrTooLarge || n != 0 {
				t.Errorf("Parse = %d, %v; want 0, ErrTooLarge", n, err)
			}
		})
	}
}

func TestParseHandBuilt(t *testing.T) {
	t.Parallel()
	many := []ext{sniExt("Many.Example")}
	for i := range 100 {
		many = append(many, ext{typ: uint16(0x1000 + i*7)})
	}
	tests := []struct {
		desc string
		in   []byte
		want Hello
		err  bool
	}{
		{desc: "no extensions", in: build(helloSpec{version: 0x0301, noExts: true}), want: Hello{Version: 0x0301}},
		{desc: "empty extensions", in: build(helloSpec{}), want: Hello{Version: 0x0303}},
		{desc: "one trailing dot goes", in: build(helloSpec{exts: []ext{sniExt("A.Example..")}}), want: Hello{SNI: "a.example.", Version: 0x0303}},
		{desc: "GREASE and unknown versions skipped", in: build(helloSpec{exts: []ext{{extSupportedVersions, []byte{8, 0x0a, 0x0a, 3, 4, 0x7f, 0x1c, 3, 3}}}}), want: Hello{Version: 0x0304}},
		{desc: "only unknown versions", in: build(helloSpec{exts: []ext{{extSupportedVersions, []byte{2, 0x0a, 0x0a}}}}), want: Hello{Version: 0x0303}},
		{desc: "ECH", in: build(helloSpec{exts: []ext{sniExt("public.example"), {typ: extECH, data: []byte{0}}}}), want: Hello{SNI: "public.example", ECH: true, Version: 0x0303}},
		{desc: "uncommon ALPN", in: build(helloSpec{exts: []ext{alpnExt("spdy/3", "h2", "x")}}), want: Hello{ALPN: []string{"spdy/3", "h2", "x"}, Version: 0x0303}},
		{desc: "a hundred extensions", in: build(helloSpec{exts: many}), want: Hello{SNI: "many.example", Version: 0x0303}},
		{desc: "a hundred extensions, one twice", in: build(helloSpec{exts: append(many[:len(many):len(many)], ext{typ: 0x1000 + 7*50})}), err: true},
		{desc: "duplicate after 32", in: build(helloSpec{exts: append(many[:40:40], ext{typ: 0x1000})}), err: true},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			h, n, err := Parse(tt.in)
			if tt.err {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse error = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil || n != len(tt.in) {
				t.Fatalf("Parse = %d, %v; want %d, nil", n, err, len(tt.in))
			}
			if !reflect.DeepEqual(h, tt.want) {
				t.Errorf("Parse = %+v, want %+v", h, tt.want)
			}
		})
	}
}

func TestParseAllocs(t *testing.T) {
	raw := captureHello(t, realConfigs[0].cfg)
	tests := []struct {
		desc string
		in   []byte
		max  float64
	}{
		{desc: "incomplete", in: raw[:len(raw)/2], max: 0},
		{desc: "declared too large", in: []byte{22, 3, 1, 0x40, 0, 1, 0xff, 0xff, 0xff}, max: 0},
		{desc: "not TLS", in: []byte("GET / HTTP/1.1\r\n"), max: 0},
		{desc: "SNI and ALPN h2, http/1.1", in: raw, max: 2},
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
	typical := captureHello(b, realConfigs[0].cfg)
	pq := captureHello(b, realConfigs[5].cfg)
	for _, bc := range []struct {
		desc string
		in   []byte
	}{
		{desc: "typical", in: typical},
		{desc: "mlkem", in: pq},
		{desc: "fragmented", in: fragment(pq, 512)},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.in)))
			for b.Loop() {
				if _, _, err := Parse(bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
