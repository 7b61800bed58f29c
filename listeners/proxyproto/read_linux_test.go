package proxyproto

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/peek/peektest"
	pp "github.com/pires/go-proxyproto"
)

// splitAt cuts b at the given offsets.
func splitAt(b []byte, at ...int) [][]byte {
	var parts [][]byte
	prev := 0
	for _, i := range at {
		parts = append(parts, b[prev:i])
		prev = i
	}
	return append(parts, b[prev:])
}

const payload = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"

func TestRead(t *testing.T) {
	t.Parallel()
	v1 := format(t, 1, src4.String(), dst4.String())
	v2tlv := format(t, 2, src6.String(), dst6.String(), pp.TLV{Type: 1, Value: []byte("h2")}, pp.TLV{Type: 2, Value: []byte("api.example.com")})
	bigTLV := format(t, 2, src4.String(), dst4.String(), pp.TLV{Type: 0xe0, Value: bytes.Repeat([]byte("x"), 1000)})
	withPayload := func(h []byte) []byte { return append(bytes.Clone(h), payload...) }
	tests := []struct {
		desc   string
		header []byte
		parts  [][]byte // header and payload as written
		max    int
	}{
		{desc: "v1 and payload in one segment", header: v1, parts: [][]byte{withPayload(v1)}},
		{desc: "v1 split", header: v1, parts: splitAt(withPayload(v1), 3, 6, 20)},
		{desc: "v1 UNKNOWN", header: []byte("PROXY UNKNOWN\r\n"), parts: [][]byte{[]byte("PROXY UNKNOWN\r\n" + payload)}},
		{desc: "v2 LOCAL", header: formatLocal(t), parts: [][]byte{withPayload(formatLocal(t))}},
		{desc: "v2 TLVs and payload in one segment", header: v2tlv, parts: [][]byte{withPayload(v2tlv)}},
		{desc: "v2 split in the signature, length and TLVs", header: v2tlv, parts: splitAt(withPayload(v2tlv), 5, 13, 15, 16, 60, len(v2tlv))},
		{desc: "v2 longer than the pooled buffer", header: bigTLV, parts: splitAt(withPayload(bigTLV), 16, 300)},
		{desc: "v2 header exactly max", header: bigTLV, parts: [][]byte{withPayload(bigTLV)}, max: len(bigTLV)},
		{desc: "v1 with a small max", header: v1, parts: [][]byte{withPayload(v1)}, max: len(v1)},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			want, n, err := Parse(tt.header)
			if err != nil || n != len(tt.header) {
				t.Fatalf("Parse(header) = %d, %v", n, err)
			}
			client, server := peektest.Pair(t)
			seen := peektest.Feed(t, client, nil, tt.parts...)
			server.SetReadDeadline(time.Now().Add(10 * time.Second))
			h, err := read(peektest.Raw(t, server), tt.max, seen)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			// The payload is intact, from its first byte.
			rest := make([]byte, len(payload)+1)
			k, err := io.ReadAtLeast(server, rest, len(payload))
			if err != nil || string(rest[:k]) != payload {
				t.Fatalf("after Read: %q, %v; want the payload", rest[:k], err)
			}
			// The TLVs are the header's own: reuse of the pooled buffer by
			// another Read does not change them.
			other, otherServer := peektest.Pair(t)
			other.Write(withPayload(v2tlv))
			otherServer.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := Read(peektest.Raw(t, otherServer), 0); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("Read = %+v\nwant   %+v", h, want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	v2 := format(t, 2, src6.String(), dst6.String(), pp.TLV{Type: 0xe0, Value: make([]byte, 300)})
	tests := []struct {
		desc    string
		send    []byte
		max     int
		close   bool
		timeout time.Duration
		want    error
	}{
		{desc: "garbage", send: []byte(payload), want: ErrNotProxy},
		{desc: "malformed v1", send: []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n" + payload), want: ErrMalformed},
		{desc: "v2 longer than max", send: v2, max: 200, want: ErrTooLong},
		{desc: "v2 longer than max, over the pooled buffer", send: v2, max: 300, want: ErrTooLong},
		{desc: "v1 longer than max", send: []byte("PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n"), max: 20, want: ErrTooLong},
		{desc: "v1 with no CRLF", send: bytes.Repeat([]byte("PROXY "), 20), want: ErrTooLong},
		{desc: "half a header, then silence", send: v2[:20], timeout: 50 * time.Millisecond, want: os.ErrDeadlineExceeded},
		{desc: "half a v1 header, then silence", send: []byte("PROXY TCP4 1.2."), timeout: 50 * time.Millisecond, want: os.ErrDeadlineExceeded},
		{desc: "half a header, then close", send: v2[:20], close: true, want: io.ErrUnexpectedEOF},
		{desc: "nothing, then close", close: true, want: io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			client, server := peektest.Pair(t)
			seen := func([]byte) {}
			if tt.send != nil {
				var then func()
				if tt.close {
					then = func() { client.CloseWrite() }
				}
				seen = peektest.Feed(t, client, then, tt.send)
			} else if tt.close {
				client.CloseWrite()
			}
			timeout := 10 * time.Second
			if tt.timeout != 0 {
				timeout = tt.timeout
			}
			server.SetReadDeadline(time.Now().Add(timeout))
			_, err := read(peektest.Raw(t, server), tt.max, seen)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Read error = %v, want %v", err, tt.want)
			}
			// Nothing was consumed.
			if len(tt.send) > 0 && !errors.Is(err, os.ErrDeadlineExceeded) {
				server.SetReadDeadline(time.Now().Add(10 * time.Second))
				first := make([]byte, min(len(tt.send), 10))
				if _, err := io.ReadFull(server, first); err != nil || !bytes.Equal(first, tt.send[:len(first)]) {
					t.Errorf("after the error the stream starts %q, %v; want %q", first, err, tt.send[:len(first)])
				}
			}
		})
	}
}

func TestReadReset(t *testing.T) {
	t.Parallel()
	client, server := peektest.Pair(t)
	seen := peektest.Feed(t, client, func() { client.SetLinger(0); client.Close() }, []byte("PROXY TCP4 "))
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := read(peektest.Raw(t, server), 0, seen); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Read error = %v, want ECONNRESET", err)
	}
}

func BenchmarkRead(b *testing.B) {
	for _, bc := range []struct {
		desc string
		in   []byte
	}{
		{desc: "v1", in: format(b, 1, src4.String(), dst4.String())},
		{desc: "v2", in: format(b, 2, src6.String(), dst6.String())},
		{desc: "v2 TLVs", in: format(b, 2, src6.String(), dst6.String(), pp.TLV{Type: 1, Value: []byte("h2")})},
	} {
		b.Run(bc.desc, func(b *testing.B) {
			client, server := peektest.Pair(b)
			rc := peektest.Raw(b, server)
			b.ReportAllocs()
			for b.Loop() {
				client.Write(bc.in)
				if _, err := Read(rc, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
