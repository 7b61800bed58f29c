package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// ipBindAddressNoPort is IP_BIND_ADDRESS_NO_PORT from <linux/in.h>: the
// kernel picks the source port at connect time, from the whole 4-tuple
// space, instead of at bind time.
const ipBindAddressNoPort = 24

// clientConfig is the one client configuration every mode uses: TLS 1.3
// only, X25519 only (Go would otherwise offer the X25519MLKEM768 hybrid
// first), no session cache so every handshake is a full one, and no chain
// verification (the CertificateVerify signature is still checked).
func clientConfig(serverName string, alpn []string) *tls.Config {
	return &tls.Config{
		ServerName:             serverName,
		InsecureSkipVerify:     true, //nolint:gosec // benchmark client; see the doc comment
		MinVersion:             tls.VersionTLS13,
		MaxVersion:             tls.VersionTLS13,
		CurvePreferences:       []tls.CurveID{tls.X25519},
		NextProtos:             alpn,
		SessionTicketsDisabled: true,
	}
}

// sourceAddrs returns the source IPs to spread connections over: the
// -src list, or 127.0.0.2, 127.0.0.3, ... enough for need connections at
// perSrc each.
func sourceAddrs(list string, need, perSrc int) ([]string, error) {
	if perSrc <= 0 {
		return nil, fmt.Errorf("-per-src must be positive, not %d", perSrc)
	}
	if list != "" {
		srcs := strings.Split(list, ",")
		if len(srcs)*perSrc < need {
			return nil, fmt.Errorf("need more source addresses: %d x %d < %d", len(srcs), perSrc, need)
		}
		return srcs, nil
	}
	count := (need + perSrc - 1) / perSrc
	if count < 1 {
		count = 1
	}
	if count > 250 {
		return nil, fmt.Errorf("%d connections need %d source addresses; 127.0.0.2-252 has 250", need, count)
	}
	srcs := make([]string, count)
	for i := range srcs {
		srcs[i] = fmt.Sprintf("127.0.0.%d", 2+i)
	}
	return srcs, nil
}

// dialTLS connects from src to target and completes a full handshake.
func dialTLS(ctx context.Context, src, target string, cfg *tls.Config) (*tls.Conn, error) {
	d := net.Dialer{
		Timeout:   10 * time.Second,
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)},
		KeepAlive: -1, // no TCP keepalive probes: idle connections must stay quiet
		Control:   bindNoPort,
	}
	raw, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return nil, fmt.Errorf("dialing %s from %s: %w", target, src, err)
	}
	c := tls.Client(raw, cfg)
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.HandshakeContext(hctx); err != nil {
		raw.Close()
		return nil, fmt.Errorf("handshake with %s: %w", target, err)
	}
	return c, nil
}

func bindNoPort(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// httpRequest is the keep-alive request every mode sends.
func httpRequest(host string) []byte {
	return []byte("GET / HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: tlsload\r\n\r\n")
}

// roundTrip sends req and reads the whole answer, which must be a 200 that
// keeps the connection open. The reader is dropped afterwards (nothing is
// pipelined, so nothing stays buffered): the client's own memory per idle
// connection stays small.
func roundTrip(c net.Conn, req []byte, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("writing request: %w", err)
	}
	br := bufio.NewReaderSize(c, 1024)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("status %d", resp.StatusCode)
	case resp.Close:
		return errors.New("server asked to close the connection")
	case br.Buffered() != 0:
		return fmt.Errorf("%d unexpected bytes after the response", br.Buffered())
	}
	return nil
}

// closeClean sends close_notify, reads until the server closes (draining
// session tickets, so close(2) finds nothing unread and sends FIN, not RST),
// then closes. The server has then finished its side of the handshake.
func closeClean(c *tls.Conn, timeout time.Duration) error {
	defer c.Close()
	if err := c.CloseWrite(); err != nil {
		return fmt.Errorf("sending close_notify: %w", err)
	}
	c.SetReadDeadline(time.Now().Add(timeout))
	if _, err := io.Copy(io.Discard, c); err != nil && !isClosedByPeer(err) {
		return fmt.Errorf("waiting for the server to close: %w", err)
	}
	return nil
}

// isClosedByPeer reports errors that only mean the server closed first
// without its own close_notify, which is fine here.
func isClosedByPeer(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF)
}
