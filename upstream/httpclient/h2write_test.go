package httpclient

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// loopbackPair is a connected pair of TCP sockets on loopback.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestCoalescedConnDeliversEveryWrite: concurrent writers' records (as
// x/net's streams write frames under its write lock) all reach the peer,
// each whole and each writer's in order, more bytes than the queue limit
// included; Close sends what was queued before closing.
func TestCoalescedConnDeliversEveryWrite(t *testing.T) {
	nc, peer := loopbackPair(t)
	c := coalesce(nc)
	const writers, records = 8, 2000
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	var mu sync.Mutex // one record at a time, as x/net's wmu
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range records {
				rec := fmt.Appendf(nil, "<%d:%d:%s>", w, i, bytes.Repeat([]byte{'a' + byte(w)}, i%97))
				mu.Lock()
				_, err := c.Write(rec)
				mu.Unlock()
				if err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b := <-got
	next := make([]int, writers)
	for len(b) > 0 {
		end := bytes.IndexByte(b, '>')
		if b[0] != '<' || end < 0 {
			t.Fatalf("a record torn apart at %q", b[:min(len(b), 40)])
		}
		parts := strings.SplitN(string(b[1:end]), ":", 3)
		w, err1 := strconv.Atoi(parts[0])
		i, err2 := strconv.Atoi(parts[1])
		if len(parts) != 3 || err1 != nil || err2 != nil || w < 0 || w >= writers {
			t.Fatalf("record %q garbled", b[:end+1])
		}
		if fill := parts[2]; i != next[w] || len(fill) != i%97 {
			t.Fatalf("writer %d: record %d (%d fill bytes), want record %d", w, i, len(fill), next[w])
		}
		next[w]++
		b = b[end+1:]
	}
	for w, n := range next {
		if n != records {
			t.Errorf("writer %d: %d records arrived, want %d", w, n, records)
		}
	}
	if _, err := c.Write([]byte("late")); err == nil {
		t.Error("a Write after Close succeeded")
	}
}

// TestCoalescedConnWriteErrorSticks: once the connection cannot be
// written, later Writes fail rather than queue bytes forever, and Reads
// end, so that x/net's read loop fails the streams.
func TestCoalescedConnWriteErrorSticks(t *testing.T) {
	nc, peer := loopbackPair(t)
	c := coalesce(nc)
	if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// Queued at once; the writer then meets EPIPE and closes the socket.
	if _, err := c.Write([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	rd := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		rd <- err
	}()
	select {
	case err := <-rd:
		if err == nil {
			t.Fatal("Read succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still blocked after the write error")
	}
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("a Write after the write error succeeded")
	}
	c.Close()
	peer.Close()
}

// TestCoalescedConnCloseBoundedByStalledPeer: a server that never reads
// cannot hold Close (x/net calls it from its read loop) past the flush
// timeout.
func TestCoalescedConnCloseBoundedByStalledPeer(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[overTLS], func(t *testing.T) {
			nc, peer := loopbackPair(t)
			_ = peer.(*net.TCPConn).SetReadBuffer(4096)
			_ = nc.(*net.TCPConn).SetWriteBuffer(4096)
			if overTLS {
				// A TLS close_notify sets a 5 s deadline of its own: Close
				// must still end within closeFlushTimeout and some slack.
				ca := testutil.NewCA(t, "coalesce CA")
				srv := tls.Server(peer, &tls.Config{Certificates: []tls.Certificate{ca.TLSCert(t, testutil.IssueOptions{}, "up.test")}})
				cl := tls.Client(nc, &tls.Config{RootCAs: ca.Pool, ServerName: "up.test"})
				hs := make(chan error, 1)
				go func() { hs <- srv.Handshake() }()
				if err := cl.Handshake(); err != nil {
					t.Fatal(err)
				}
				if err := <-hs; err != nil {
					t.Fatal(err)
				}
				nc = cl
			}
			c := coalesce(nc)
			// Far more than the socket buffers hold: the second Write returns
			// only once the writer took the first chunk, which write(2) cannot
			// finish; the third waits for room.
			chunk := make([]byte, 1<<20)
			progress := make(chan struct{}, 128)
			wrote := make(chan struct{})
			go func() {
				defer close(wrote)
				for range 128 {
					if _, err := c.Write(chunk); err != nil {
						return
					}
					progress <- struct{}{}
				}
			}()
			for range 2 {
				select {
				case <-progress:
				case <-time.After(10 * time.Second):
					t.Fatal("the first two Writes did not return")
				}
			}
			start := time.Now()
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			select {
			case <-closed:
			case <-time.After(closeFlushTimeout + 10*time.Second):
				t.Fatal("Close blocked on a server that does not read")
			}
			if d := time.Since(start); d > closeFlushTimeout+3*time.Second {
				t.Errorf("Close took %v on a server that does not read, want about %v", d, closeFlushTimeout)
			}
			<-wrote
			if _, err := c.Write([]byte("x")); err == nil {
				t.Fatal("a Write after Close succeeded")
			}
		})
	}
}
