package proxyproto

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	pp "github.com/pires/go-proxyproto"
)

// FuzzParse checks that Parse never panics, that what it reports holds
// together, and that it agrees with go-proxyproto: a header Parse accepts
// (outside the cases where the specification and go-proxyproto part, see
// doc.go), go-proxyproto accepts with the same addresses and TLVs; a
// header go-proxyproto accepts, Parse does not call incomplete or absent.
//
// Run it with a short -fuzzminimizetime (e.g. 200x): minimising the
// longer seeds otherwise stalls the run for a minute at a time.
func FuzzParse(f *testing.F) {
	for _, s := range [][]byte{
		format(f, 1, src4.String(), dst4.String()),
		format(f, 1, src6.String(), dst6.String()),
		format(f, 2, src4.String(), dst4.String()),
		format(f, 2, src6.String(), dst6.String(), pp.TLV{Type: 1, Value: []byte("h2")}, pp.TLV{Type: 4, Value: []byte{0}}),
		formatLocal(f),
		[]byte("PROXY UNKNOWN\r\n"),
		withCRC(tlv(TypeAuthority, []byte("a.example")), false),
		v2(0x21, 0x31, make([]byte, addrLenUnix+3)),
		[]byte("GET / HTTP/1.1\r\n"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := Parse(b)
		if err == ErrIncomplete {
			if n <= len(b) || n > v2FixedLen+0xffff {
				t.Fatalf("incomplete with %d bytes, needs %d", len(b), n)
			}
		} else if err != nil && n != 0 {
			t.Fatalf("error %v with n = %d", err, n)
		}
		if err == nil {
			if n <= 0 || n > len(b) {
				t.Fatalf("Parse took %d of %d bytes", n, len(b))
			}
			if _, _, err := Parse(b[:n-1]); err != ErrIncomplete {
				t.Fatalf("Parse(one byte short) = %v, want ErrIncomplete", err)
			}
			if h.Local && (h.Source.IsValid() || h.Dest.IsValid()) || !h.Local && !(h.Source.IsValid() && h.Dest.IsValid()) {
				t.Fatalf("Local %v with addresses %v, %v", h.Local, h.Source, h.Dest)
			}
		}
		compare(t, b, h, n, err)
	})
}

// compare checks Parse's result on b against go-proxyproto's.
func compare(t *testing.T, b []byte, h Header, n int, err error) {
	if err == nil {
		if partsFromSpec(b) {
			return
		}
		th, terr := theirs(b[:n])
		if terr != nil {
			t.Fatalf("Parse accepted %q as %+v; go-proxyproto: %v", b[:n], h, terr)
		}
		agree(t, b[:n], h, th)
		return
	}
	// Where go-proxyproto accepts, the header is whole: not incomplete,
	// not absent. (Parse may still refuse it: it is stricter.)
	if err == ErrIncomplete || err == ErrNotProxy {
		if th, terr := theirs(b); terr == nil {
			t.Fatalf("Parse(%q) = %v; go-proxyproto accepted %+v", b, err, th)
		}
	}
}

// partsFromSpec reports the headers on which go-proxyproto departs from
// the specification: a v2 LOCAL header's family is to be ignored, and a
// PROXY header of family UNSPEC may be accepted.
func partsFromSpec(b []byte) bool {
	return bytes.HasPrefix(b, sigV2) && (b[12] == 0x20 || b[13] == 0x00)
}

// agree checks that go-proxyproto's th says what h says of header b.
func agree(t *testing.T, b []byte, h Header, th *pp.Header) {
	// v2 LOCAL is left out (partsFromSpec); v1 UNKNOWN is LOCAL to them.
	if int(th.Version) != h.Version || th.Command.IsLocal() != (h.Version == 1 && h.Local) {
		t.Fatalf("header %q: ours %+v, theirs %+v", b, h, th)
	}
	if !h.Local {
		if ap(th.SourceAddr) != h.Source || ap(th.DestinationAddr) != h.Dest {
			t.Fatalf("header %q: ours %v -> %v, theirs %v -> %v", b, h.Source, h.Dest, th.SourceAddr, th.DestinationAddr)
		}
	}
	if h.Version != 2 {
		return
	}
	tlvs, err := th.TLVs()
	if err != nil {
		t.Fatalf("header %q: Parse accepted its TLVs, go-proxyproto: %v", b, err)
	}
	var want []TLV
	for _, tv := range tlvs {
		if tv.Type != pp.PP2_TYPE_NOOP {
			want = append(want, TLV{Type: byte(tv.Type), Value: tv.Value})
		}
	}
	if len(want) != len(h.TLVs) {
		t.Fatalf("header %q: TLVs ours %v, theirs %v", b, h.TLVs, want)
	}
	for i := range want {
		if want[i].Type != h.TLVs[i].Type || !bytes.Equal(want[i].Value, h.TLVs[i].Value) {
			t.Fatalf("header %q: TLV %d ours %v, theirs %v", b, i, h.TLVs[i], want[i])
		}
	}
}

// ap turns go-proxyproto's address into ours.
func ap(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return netip.AddrPortFrom(ip, uint16(a.Port))
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return netip.AddrPortFrom(ip, uint16(a.Port))
	}
	return netip.AddrPort{}
}
