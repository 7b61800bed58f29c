package sniff

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/peek/peektest"
	"github.com/edgeway/edgeway/internal/testutil"
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

func TestPeekWaitsForTheWholeHello(t *testing.T) {
	t.Parallel()
	raw := captureHello(t, realConfigs[5].cfg) // ML-KEM: over a thousand bytes
	want, _, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	frag := fragment(raw, 2, 300, 600)
	tests := []struct {
		desc  string
		in    []byte
		parts [][]byte
	}{
		{desc: "one write", in: raw, parts: [][]byte{raw}},
		{desc: "record header cut", in: raw, parts: splitAt(raw, 3)},
		{desc: "three writes", in: raw, parts: splitAt(raw, 1, 5, len(raw)/2)},
		{desc: "every 100 bytes", in: raw, parts: splitAt(raw, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200)},
		{desc: "fragmented records, cut inside headers", in: frag, parts: splitAt(frag, 8, 310, 312, 920)},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			client, server := peektest.Pair(t)
			seen := peektest.Feed(t, client, nil, tt.parts...)
			server.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, MaxHelloBytes)
			h, n, err := peekHello(peektest.Raw(t, server), buf, seen)
			if err != nil || n != len(tt.in) {
				t.Fatalf("Peek = %d, %v; want %d, nil", n, err, len(tt.in))
			}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("Peek = %+v, want %+v", h, want)
			}
			if !bytes.Equal(buf[:n], tt.in) {
				t.Errorf("buf[:n] is not the hello as sent")
			}
			got := make([]byte, len(tt.in))
			if _, err := io.ReadFull(server, got); err != nil || !bytes.Equal(got, tt.in) {
				t.Errorf("reading after Peek: %v; the bytes differ from the hello: %v", err, !bytes.Equal(got, tt.in))
			}
		})
	}
}

func TestPeekErrors(t *testing.T) {
	t.Parallel()
	raw := captureHello(t, realConfigs[0].cfg)
	tests := []struct {
		desc    string
		send    []byte
		buf     int
		then    func(c interface{ CloseWrite() error })
		timeout time.Duration
		want    error
	}{
		{desc: "HTTP request", send: []byte("GET / HTTP/1.1\r\n"), want: ErrNotTLS},
		{desc: "half a hello, then silence", send: raw[:len(raw)/2], timeout: 50 * time.Millisecond, want: os.ErrDeadlineExceeded},
		{desc: "half a hello, then close", send: raw[:len(raw)/2], then: func(c interface{ CloseWrite() error }) { c.CloseWrite() }, want: io.ErrUnexpectedEOF},
		{desc: "buffer too small", send: raw, buf: 100, want: ErrTooLarge},
		{desc: "garbage after a record header", send: []byte{22, 3, 1, 0, 10, 2, 0, 0, 6}, want: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			client, server := peektest.Pair(t)
			var then func()
			if tt.then != nil {
				then = func() { tt.then(client) }
			}
			seen := peektest.Feed(t, client, then, tt.send)
			timeout := cmp(tt.timeout, 10*time.Second)
			server.SetReadDeadline(time.Now().Add(timeout))
			bufLen := cmp(tt.buf, MaxHelloBytes)
			_, n, err := peekHello(peektest.Raw(t, server), make([]byte, bufLen), seen)
			if !errors.Is(err, tt.want) || n != 0 {
				t.Fatalf("Peek = %d, %v; want 0, %v", n, err, tt.want)
			}
		})
	}
}

// cmp returns v, or def when v is the zero value.
func cmp[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// After Peek, crypto/tls reads the hello from the socket itself and the
// handshake completes: Peek took nothing.
func TestPeekThenHandshake(t *testing.T) {
	t.Parallel()
	ca := testutil.NewCA(t, "sniff test CA")
	cert := ca.TLSCert(t, testutil.IssueOptions{}, "site.example")
	client, server := peektest.Pair(t)
	cfg := &tls.Config{ServerName: "Site.Example", RootCAs: ca.Pool, NextProtos: []string{"h2"}}
	done := make(chan error, 1)
	go func() {
		c := tls.Client(client, cfg)
		err := c.Handshake()
		if err == nil {
			_, err = c.Write([]byte("ping"))
		}
		done <- err
	}()
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	h, _, err := Peek(peektest.Raw(t, server), make([]byte, MaxHelloBytes))
	if err != nil {
		t.Fatal(err)
	}
	if h.SNI != "site.example" || !reflect.DeepEqual(h.ALPN, []string{"h2"}) {
		t.Errorf("Peek = %+v", h)
	}
	s := tls.Server(server, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	got := make([]byte, 4)
	if _, err := io.ReadFull(s, got); err != nil || string(got) != "ping" {
		t.Fatalf("server read %q, %v", got, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("client: %v", err)
	}
	if s.ConnectionState().NegotiatedProtocol != "h2" {
		t.Errorf("negotiated %q", s.ConnectionState().NegotiatedProtocol)
	}
}

func TestPeekReset(t *testing.T) {
	t.Parallel()
	raw := captureHello(t, realConfigs[0].cfg)
	client, server := peektest.Pair(t)
	seen := peektest.Feed(t, client, func() { client.SetLinger(0); client.Close() }, raw[:10])
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err := peekHello(peektest.Raw(t, server), make([]byte, MaxHelloBytes), seen)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Peek error = %v, want ECONNRESET", err)
	}
}

// BenchmarkPeek measures Peek of a whole hello that is already there,
// followed by reading it off the socket.
func BenchmarkPeek(b *testing.B) {
	raw := captureHello(b, realConfigs[0].cfg)
	client, server := peektest.Pair(b)
	rc := peektest.Raw(b, server)
	buf := make([]byte, MaxHelloBytes)
	got := make([]byte, len(raw))
	b.ReportAllocs()
	for b.Loop() {
		client.Write(raw)
		if _, _, err := Peek(rc, buf); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		io.ReadFull(server, got)
		b.StartTimer()
	}
}
