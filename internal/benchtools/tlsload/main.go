// Command tlsload is the TLS load generator and reference servers used by
// scripts/bench-tls.sh. It measures the front end of a TLS server: idle
// connections held after a full handshake, full handshakes per second, and
// raw byte streaming through a passthrough proxy.
//
// The client always does a full TLS 1.3 handshake with X25519 as the only
// key exchange (no post-quantum hybrid) and no session resumption, so every
// server under test does the same work per connection. It skips certificate
// chain verification (InsecureSkipVerify) to keep its own cost down; the
// server's CertificateVerify signature is still checked by crypto/tls.
//
// Modes (one line of output each step, for the calling script):
//
//	-mode idle -addr A -n N [-h2]    READY ok= failed= secs=, then on stdin EOF,
//	                                 SIGTERM or -hold expiry: PROBE ok= of=, CLOSED
//	-mode handshake -addr A -d D -c C    RESULT handshakes= failed= secs= hs_per_sec=
//	-mode stream -addr A -servername S -bytes B    RESULT bytes= secs= mb_per_sec=
//	-mode sink -listen A -cert C -key K      LISTENING addr (reads, discards, answers the count)
//	-mode tlsserver -listen A -cert C -key K LISTENING addr (net/http over TLS answering "ok\n")
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

// options holds every flag; each mode reads the ones it documents.
type options struct {
	mode        string
	addr        string
	listen      string
	certFile    string
	keyFile     string
	serverName  string
	n           int
	srcs        string
	perSrc      int
	conc        int
	hold        time.Duration
	openTimeout time.Duration
	probe       int
	h2          bool
	duration    time.Duration
	withReq     bool
	bytes       string
	writeSize   string
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "", "idle | handshake | stream | sink | tlsserver")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:8443", "target host:port (client modes)")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:0", "listen address (sink, tlsserver)")
	flag.StringVar(&o.certFile, "cert", "", "PEM certificate (sink, tlsserver)")
	flag.StringVar(&o.keyFile, "key", "", "PEM private key (sink, tlsserver)")
	flag.StringVar(&o.serverName, "servername", "", "SNI to send (default: none for an IP address)")
	flag.IntVar(&o.n, "n", 10000, "idle: number of connections")
	flag.StringVar(&o.srcs, "src", "", "comma-separated source IPs (default 127.0.0.2, 127.0.0.3, ...)")
	flag.IntVar(&o.perSrc, "per-src", 10000, "idle: connections per source address")
	flag.IntVar(&o.conc, "c", 32, "connections opened concurrently (idle, handshake)")
	flag.DurationVar(&o.hold, "hold", 300*time.Second, "idle: longest time to hold the connections")
	flag.DurationVar(&o.openTimeout, "open-timeout", 120*time.Second, "idle: give up opening after this long")
	flag.IntVar(&o.probe, "probe", 200, "idle: connections re-checked with a second request before closing")
	flag.BoolVar(&o.h2, "h2", false, "idle: speak HTTP/2 (ALPN h2) rather than HTTP/1.1")
	flag.DurationVar(&o.duration, "d", 10*time.Second, "handshake: how long to run")
	flag.BoolVar(&o.withReq, "req", false, "handshake: also send one GET / and read the answer")
	flag.StringVar(&o.bytes, "bytes", "1GiB", "stream: bytes to send (suffixes KiB, MiB, GiB, KB, MB, GB)")
	flag.StringVar(&o.writeSize, "write-size", "256KiB", "stream: size of each write")
	flag.Parse()

	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "tlsload: %v\n", err)
		os.Exit(1)
	}
}

func run(o options) error {
	switch o.mode {
	case "idle":
		return runIdle(o, os.Stdin)
	case "handshake":
		return runHandshake(o)
	case "stream":
		return runStream(o)
	case "sink":
		return runServer(o, serveSink)
	case "tlsserver":
		return runServer(o, serveHTTP)
	case "":
		return fmt.Errorf("-mode is required (idle, handshake, stream, sink, tlsserver)")
	default:
		return fmt.Errorf("unknown -mode %q (want idle, handshake, stream, sink or tlsserver)", o.mode)
	}
}
