package peek_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/peek"
	"github.com/edgeway/edgeway/internal/peek/peektest"
)

// upTo returns a Complete that wants the first n bytes, calling seen (if
// not nil) with every prefix it is shown.
func upTo(n int, seen func([]byte)) peek.Complete {
	return func(b []byte) (int, error) {
		if seen != nil {
			seen(b)
		}
		return n, nil
	}
}

func TestPeekLeavesBytes(t *testing.T) {
	t.Parallel()
	client, server := peektest.Pair(t)
	if _, err := client.Write([]byte("hello, world")); err != nil {
		t.Fatal(err)
	}
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	rc := peektest.Raw(t, server)
	buf := make([]byte, 64)
	var seen []byte
	n, err := peek.Peek(rc, buf, upTo(5, func(b []byte) { seen = append(seen[:0], b...) }))
	if err != nil || n != 5 {
		t.Fatalf("Peek = %d, %v; want 5, nil", n, err)
	}
	// The bytes are still on the socket, all of them.
	got := make([]byte, 12)
	if _, err := io.ReadFull(server, got); err != nil || string(got) != "hello, world" {
		t.Fatalf("read after Peek = %q, %v", got, err)
	}
	if len(seen) == 0 || !bytes.HasPrefix([]byte("hello, world"), seen) {
		t.Errorf("complete saw %q", seen)
	}
}

func TestPeekWaitsForMore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		parts []string
	}{
		{desc: "two parts", parts: []string{"hel", "lo, world"}},
		{desc: "byte by byte", parts: []string{"h", "e", "l", "l", "o"}},
		{desc: "last part carries more", parts: []string{"he", "llo, and more"}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			client, server := peektest.Pair(t)
			var parts [][]byte
			for _, p := range tt.parts {
				parts = append(parts, []byte(p))
			}
			var calls atomic.Int32
			seen := peektest.Feed(t, client, nil, parts...)
			server.SetReadDeadline(time.Now().Add(10 * time.Second))
			rc := peektest.Raw(t, server)
			n, err := peek.Peek(rc, make([]byte, 64), upTo(5, func(b []byte) { calls.Add(1); seen(b) }))
			if err != nil || n != 5 {
				t.Fatalf("Peek = %d, %v; want 5, nil", n, err)
			}
			if c := calls.Load(); c < 2 && len(parts[0]) < 5 {
				t.Errorf("complete called %d times; Peek never waited", c)
			}
			buf := make([]byte, 5)
			if err := peek.Consume(rc, buf); err != nil || string(buf) != "hello" {
				t.Fatalf("Consume = %q, %v", buf, err)
			}
		})
	}
}

func TestConsumeLeavesTheRest(t *testing.T) {
	t.Parallel()
	client, server := peektest.Pair(t)
	client.Write([]byte("HEADERpayload"))
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	rc := peektest.Raw(t, server)
	buf := make([]byte, 32)
	n, err := peek.Peek(rc, buf, upTo(6, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := peek.Consume(rc, buf[:n]); err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "HEADER" {
		t.Errorf("consumed %q, want HEADER", buf[:n])
	}
	client.CloseWrite()
	rest, err := io.ReadAll(server)
	if err != nil || string(rest) != "payload" {
		t.Errorf("rest = %q, %v; want payload", rest, err)
	}
}

func TestPeekEndings(t *testing.T) {
	t.Parallel()
	errBad := errors.New("bad bytes")
	tests := []struct {
		desc     string
		send     string
		buf      int
		complete peek.Complete
		closeWr  bool // half-close after the peeker saw the bytes
		closeNow bool // half-close before peeking
		want     error
	}{
		{desc: "closed before sending", closeNow: true, buf: 8, complete: upTo(1, nil), want: io.EOF},
		{desc: "closed before peek, short", send: "abc", closeNow: true, buf: 8, complete: upTo(5, nil), want: io.ErrUnexpectedEOF},
		{desc: "closed while waiting", send: "abc", closeWr: true, buf: 8, complete: upTo(5, nil), want: io.ErrUnexpectedEOF},
		{desc: "buffer full", send: "abcdefgh", buf: 4, complete: upTo(6, nil), want: peek.ErrFull},
		{desc: "want beyond buffer", send: "ab", buf: 4, complete: upTo(100, nil), want: peek.ErrFull},
		{desc: "complete's error", send: "ab", buf: 4, complete: func([]byte) (int, error) { return 0, errBad }, want: errBad},
		{desc: "deadline", send: "abc", buf: 8, complete: upTo(5, nil), want: os.ErrDeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			client, server := peektest.Pair(t)
			complete := tt.complete
			if tt.send != "" {
				var then func()
				if tt.closeWr {
					then = func() { client.CloseWrite() }
				}
				seen := peektest.Feed(t, client, then, []byte(tt.send))
				inner := complete
				complete = func(b []byte) (int, error) { seen(b); return inner(b) }
			}
			if tt.closeNow {
				if tt.send != "" {
					// Make sure the bytes are there before the FIN.
					peek.Peek(peektest.Raw(t, server), make([]byte, len(tt.send)), upTo(len(tt.send), nil))
				}
				client.CloseWrite()
			}
			timeout := 10 * time.Second
			if errors.Is(tt.want, os.ErrDeadlineExceeded) {
				timeout = 50 * time.Millisecond
			}
			server.SetReadDeadline(time.Now().Add(timeout))
			_, err := peek.Peek(peektest.Raw(t, server), make([]byte, tt.buf), complete)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Peek error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestPeekReset(t *testing.T) {
	t.Parallel()
	client, server := peektest.Pair(t)
	seen := peektest.Feed(t, client, func() {
		client.SetLinger(0)
		client.Close()
	}, []byte("abc"))
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := peek.Peek(peektest.Raw(t, server), make([]byte, 8), upTo(5, seen))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("Peek error = %v, want ECONNRESET", err)
	}
}

func TestConsumeShort(t *testing.T) {
	t.Parallel()
	client, server := peektest.Pair(t)
	client.Write([]byte("abc"))
	client.CloseWrite()
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := peek.Consume(peektest.Raw(t, server), make([]byte, 5)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Consume error = %v, want io.ErrUnexpectedEOF", err)
	}
}

func BenchmarkPeekConsume(b *testing.B) {
	client, server := peektest.Pair(b)
	rc := peektest.Raw(b, server)
	msg := bytes.Repeat([]byte("x"), 512)
	buf := make([]byte, 1024)
	complete := upTo(len(msg), nil)
	b.ReportAllocs()
	for b.Loop() {
		client.Write(msg)
		n, err := peek.Peek(rc, buf, complete)
		if err != nil {
			b.Fatal(err)
		}
		if err := peek.Consume(rc, buf[:n]); err != nil {
			b.Fatal(err)
		}
	}
}
