package h3

import (
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/quic-go/quic-go/quicvarint"
)

// QUIC v1 long-header packet types (RFC 9000 §17.2).
const (
	typeInitial = iota
	type0RTT
	typeHandshake
	typeRetry
)

// longTypes lists the long-header packet types coalesced in datagram d
// (RFC 9000 §12.2), stopping at a short-header packet or one it cannot
// parse.
func longTypes(d []byte) []int {
	var types []int
	for len(d) > 6 && d[0]&0x80 != 0 {
		typ := int(d[0]&0x30) >> 4
		types = append(types, typ)
		if typ == typeRetry {
			break // the rest is the Retry token
		}
		p := 5 // first byte, version
		p += 1 + int(d[p])
		if p >= len(d) {
			break
		}
		p += 1 + int(d[p])
		if typ == typeInitial {
			n, l, err := quicvarint.Parse(d[min(p, len(d)):])
			if err != nil {
				break
			}
			p += l + int(n)
		}
		n, l, err := quicvarint.Parse(d[min(p, len(d)):])
		if err != nil {
			break
		}
		p += l + int(n)
		if p > len(d) {
			break
		}
		d = d[p:]
	}
	return types
}

// relay forwards UDP datagrams between one client and a server, so a test
// can see the packet types the server sends and hold back what the
// client sends from a point on.
type relay struct {
	front, back *net.UDPConn
	server      *net.UDPAddr

	mu      sync.Mutex
	client  *net.UDPAddr
	hold    func(types []int) bool // from the first datagram it is true for, the client's datagrams are held
	holding bool
	held    int
	fromSrv []int // the long-header types the server sent, in order
	// stall, until release, queues what the server sends in backlog.
	stall   bool
	backlog [][]byte
	wg      sync.WaitGroup
}

// newRelay starts a relay to server on 127.0.0.1; the client dials
// r.Addr().
func newRelay(t *testing.T, server net.Addr, hold func([]int) bool) *relay {
	t.Helper()
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	front, err := net.ListenUDP("udp", lo)
	if err != nil {
		t.Fatal(err)
	}
	back, err := net.ListenUDP("udp", lo)
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{front: front, back: back, server: server.(*net.UDPAddr), hold: hold}
	r.wg.Go(r.fromClient)
	r.wg.Go(r.fromServer)
	t.Cleanup(func() {
		front.Close()
		back.Close()
		r.wg.Wait()
	})
	return r
}

func (r *relay) Addr() *net.UDPAddr { return r.front.LocalAddr().(*net.UDPAddr) }

func (r *relay) fromClient() {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.front.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.client = from
		if !r.holding && r.hold != nil && r.hold(longTypes(buf[:n])) {
			r.holding = true
		}
		if r.holding {
			r.held++
		}
		holding := r.holding
		r.mu.Unlock()
		if !holding {
			r.back.WriteToUDP(buf[:n], r.server)
		}
	}
}

func (r *relay) fromServer() {
	buf := make([]byte, 65536)
	for {
		n, _, err := r.back.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		r.fromSrv = append(r.fromSrv, longTypes(buf[:n])...)
		client := r.client
		if r.stall {
			r.backlog = append(r.backlog, append([]byte(nil), buf[:n]...))
			client = nil
		}
		r.mu.Unlock()
		if client != nil {
			r.front.WriteToUDP(buf[:n], client)
		}
	}
}

// stallServer starts queueing what the server sends, until release.
func (r *relay) stallServer() {
	r.mu.Lock()
	r.stall = true
	r.mu.Unlock()
}

// release sends on what the server sent while the relay was stalled,
// and stops stalling.
func (r *relay) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.backlog {
		r.front.WriteToUDP(d, r.client)
	}
	r.backlog, r.stall = nil, false
}

// serverSent reports whether the server sent a packet of type typ.
func (r *relay) serverSent(typ int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.fromSrv {
		if t == typ {
			return true
		}
	}
	return false
}

// heldCount is the number of client datagrams held back.
func (r *relay) heldCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

func TestLongTypes(t *testing.T) {
	t.Parallel()
	long := func(typ byte, payload int, token bool) []byte {
		b := []byte{0xc0 | typ<<4, 0, 0, 0, 1, 2, 0xaa, 0xbb, 1, 0xcc}
		if token {
			b = append(b, 0)
		}
		b = quicvarint.Append(b, uint64(payload))
		return append(b, make([]byte, payload)...)
	}
	cat := func(ps ...[]byte) []byte {
		var b []byte
		for _, p := range ps {
			b = append(b, p...)
		}
		return b
	}
	for _, tc := range []struct {
		desc string
		d    []byte
		want []int
	}{
		{desc: "Initial", d: long(typeInitial, 1100, true), want: []int{typeInitial}},
		{desc: "Initial and Handshake", d: cat(long(typeInitial, 40, true), long(typeHandshake, 60, false)), want: []int{typeInitial, typeHandshake}},
		{desc: "0-RTT then short header", d: cat(long(type0RTT, 300, false), []byte{0x40, 1, 2, 3}), want: []int{type0RTT}},
		{desc: "short header", d: []byte{0x41, 1, 2, 3, 4, 5, 6, 7}, want: nil},
		{desc: "truncated", d: long(typeHandshake, 60, false)[:12], want: []int{typeHandshake}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			if got := longTypes(tc.d); !slices.Equal(got, tc.want) {
				t.Errorf("longTypes = %v, want %v", got, tc.want)
			}
		})
	}
}
