package sniff

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// captureHello runs a crypto/tls client with cfg over a pipe and returns
// the records of the ClientHello it sends.
func captureHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	cli, srv := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tls.Client(cli, cfg).Handshake() // fails once srv closes
	}()
	var out []byte
	var hdr [recordHeaderLen]byte
	// crypto/tls sends its hello in one record (it fits in 2^14 bytes).
	if _, err := io.ReadFull(srv, hdr[:]); err != nil {
		t.Fatalf("reading hello: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
	if _, err := io.ReadFull(srv, body); err != nil {
		t.Fatalf("reading hello: %v", err)
	}
	out = append(append(out, hdr[:]...), body...)
	srv.Close()
	cli.Close()
	<-done
	return out
}

var errSeen = errors.New("test: seen the hello")

// serverView feeds raw to a crypto/tls server and returns the
// ClientHelloInfo it gets, or nil if it refuses the hello first.
func serverView(t testing.TB, raw []byte) *tls.ClientHelloInfo {
	t.Helper()
	cli, srv := net.Pipe()
	go func() {
		cli.Write(raw)
		io.Copy(io.Discard, cli) // the alert
	}()
	var info *tls.ClientHelloInfo
	tls.Server(srv, &tls.Config{GetConfigForClient: func(i *tls.ClientHelloInfo) (*tls.Config, error) {
		c := *i
		info = &c
		return nil, errSeen
	}}).Handshake()
	srv.Close()
	cli.Close()
	return info
}

// fragment splits the handshake message in the single record rec over
// records of the given payload sizes (the last one takes the rest).
func fragment(rec []byte, sizes ...int) []byte {
	msg := rec[recordHeaderLen:]
	var out []byte
	for i := 0; len(msg) > 0; i++ {
		n := len(msg)
		if i < len(sizes) && sizes[i] < n {
			n = sizes[i]
		}
		out = appendRecord(out, recordTypeHandshake, 0x0301, msg[:n])
		msg = msg[n:]
	}
	return out
}

func appendRecord(out []byte, typ byte, vers uint16, payload []byte) []byte {
	out = append(out, typ, byte(vers>>8), byte(vers))
	out = binary.BigEndian.AppendUint16(out, uint16(len(payload)))
	return append(out, payload...)
}

// ext is one extension for buildHello.
type ext struct {
	typ  uint16
	data []byte
}

// helloSpec describes a ClientHello built by hand; zero fields get
// sensible values.
type helloSpec struct {
	version   uint16
	sessionID []byte
	suites    []byte // raw cipher_suites
	comp      []byte // raw compression methods
	noExts    bool
	exts      []ext
	extsLen   int // overrides the extensions block length when not 0
}

// buildMsg returns the handshake message (header included) for s.
func buildMsg(s helloSpec) []byte {
	if s.version == 0 {
		s.version = 0x0303
	}
	if s.suites == nil {
		s.suites = []byte{0x13, 0x01, 0xc0, 0x2f}
	}
	if s.comp == nil {
		s.comp = []byte{0}
	}
	body := binary.BigEndian.AppendUint16(nil, s.version)
	body = append(body, make([]byte, 32)...)
	body = append(body, byte(len(s.sessionID)))
	body = append(body, s.sessionID...)
	body = binary.BigEndian.AppendUint16(body, uint16(len(s.suites)))
	body = append(body, s.suites...)
	body = append(body, byte(len(s.comp)))
	body = append(body, s.comp...)
	if !s.noExts {
		var exts []byte
		for _, e := range s.exts {
			exts = binary.BigEndian.AppendUint16(exts, e.typ)
			exts = binary.BigEndian.AppendUint16(exts, uint16(len(e.data)))
			exts = append(exts, e.data...)
		}
		n := len(exts)
		if s.extsLen != 0 {
			n = s.extsLen
		}
		body = binary.BigEndian.AppendUint16(body, uint16(n))
		body = append(body, exts...)
	}
	msg := []byte{typeClientHello, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}
	return append(msg, body...)
}

// build returns s as one handshake record.
func build(s helloSpec) []byte {
	return appendRecord(nil, recordTypeHandshake, 0x0301, buildMsg(s))
}

// sniExt is a server_name extension naming names (each as host_name).
func sniExt(names ...string) ext {
	var list []byte
	for _, n := range names {
		list = append(list, 0)
		list = binary.BigEndian.AppendUint16(list, uint16(len(n)))
		list = append(list, n...)
	}
	return ext{extServerName, lengthPrefixed16(list)}
}

// alpnExt is an ALPN extension offering protos.
func alpnExt(protos ...string) ext {
	var list []byte
	for _, p := range protos {
		list = append(list, byte(len(p)))
		list = append(list, p...)
	}
	return ext{extALPN, lengthPrefixed16(list)}
}

func lengthPrefixed16(b []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}
