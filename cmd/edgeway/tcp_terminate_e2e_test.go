package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// echoServer is a plain TCP server on loopback that sends back every
// line it reads, prefixed with "echo ".
func echoServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewScanner(c)
				for r.Scan() {
					fmt.Fprintf(c, "echo %s\n", r.Text())
				}
			}()
		}
	}()
	return ln
}

// TestTCPRouteTLSTerminate: a tcp route with `tls terminate` does the
// handshake with edgeway's certificate (the client verifies it) and sends
// the plaintext stream to a plain TCP server, beside a passthrough route
// on the same port.
func TestTCPRouteTLSTerminate(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "edge CA")
	cert, key := ca.IssueFiles(t, dir, testutil.IssueOptions{}, "db.test")
	echo := echoServer(t)
	mainExtra := fmt.Sprintf("tls { cert %s %s default }\nlisten websecure {\n  addr 127.0.0.1:0\n  protocols tls http1\n}\n", cert, key)
	routes := fmt.Sprintf("upstream echo { server %s }\ntcp route db {\n  match HostSNI(`db.test`)\n  tls terminate\n  listeners websecure\n  to echo\n}\n", echo.Addr())
	p, _, _ := startEdgewayIn(t, dir, mainExtra, map[string]string{"db.routes": routes})
	addr := p.Addrs(t, 2)["websecure"]

	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{ServerName: "db.test", RootCAs: ca.Pool})
	if err != nil {
		t.Fatalf("TLS to edgeway as db.test: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "db.test" {
		t.Errorf("certificate for %q, want edgeway's db.test", got)
	}
	r := bufio.NewReader(c)
	for _, line := range []string{"hello", "second line"} {
		fmt.Fprintf(c, "%s\n", line)
		got, err := r.ReadString('\n')
		if err != nil || got != "echo "+line+"\n" {
			t.Fatalf("after %q: read %q, %v; want the echo server's plaintext answer", line, got, err)
		}
	}
	// The client closing its side ends the tunnel; the server's close
	// reaches the client as EOF.
	c.CloseWrite()
	if rest, err := io.ReadAll(r); err != nil || len(rest) != 0 {
		t.Errorf("after close: %q, %v; want a clean EOF", rest, err)
	}
}
