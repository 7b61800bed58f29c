package testutil

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// RawIOTimeout bounds each raw connection's reads and writes.
const RawIOTimeout = 5 * time.Second

// DialRaw connects to addr with a RawIOTimeout deadline and closes the
// connection when the test ends.
func DialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(RawIOTimeout))
	return c
}

// RawRoundTrip writes raw bytes to addr and reads until the server
// closes; closed is false when the read deadline passed first.
func RawRoundTrip(t testing.TB, addr, raw string) (out string, closed bool) {
	t.Helper()
	c := DialRaw(t, addr)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), false
	}
	return string(b), true
}

// ReadResponses parses the responses in raw, in order, reading bodies as
// the answer to a GET (or to HEAD when head is set); each body is kept in
// memory for BodyOf.
func ReadResponses(raw string, head bool) []*http.Response {
	br := bufio.NewReader(strings.NewReader(raw))
	var req *http.Request
	if head {
		req = &http.Request{Method: http.MethodHead}
	}
	var out []*http.Response
	for {
		res, err := http.ReadResponse(br, req)
		if err != nil {
			return out
		}
		b, _ := io.ReadAll(res.Body)
		res.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, res)
	}
}

// BodyOf reads what is left of a response body.
func BodyOf(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// TCPPair returns the two ends of a loopback TCP connection, both closed
// when the test ends.
func TCPPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}
