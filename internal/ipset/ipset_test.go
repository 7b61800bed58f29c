package ipset

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"testing"
)

func prefixes(t testing.TB, ss ...string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, s := range ss {
		p, err := ParsePrefix(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestContains(t *testing.T) {
	t.Parallel()
	s := New(prefixes(t, "10.0.0.0/8", "192.0.2.7", "192.0.2.8/31", "2001:db8::/32", "::ffff:198.51.100.0/120", "fe80::1", "172.16.5.9/12"))
	for addr, want := range map[string]bool{
		"10.0.0.0": true, "10.255.255.255": true, "11.0.0.0": false, "9.255.255.255": false,
		"192.0.2.7": true, "192.0.2.8": true, "192.0.2.9": true, "192.0.2.10": false, "192.0.2.6": false,
		"::ffff:10.1.2.3":  true, // mapped: its IPv4 address counts
		"198.51.100.42":    true, // a mapped prefix counts as IPv4
		"2001:db8:ffff::1": true, "2001:db9::": false,
		"fe80::1": true, "fe80::1%eth0": true, "fe80::2": false,
		"172.31.255.255": true, "172.32.0.0": false, // host bits ignored: 172.16.0.0/12
	} {
		if got := s.Contains(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", addr, got, want)
		}
	}
	if s.Ranges() != 6 { // 192.0.2.7-9 join into one
		t.Errorf("%d ranges, want 6", s.Ranges())
	}
	var empty *Set
	if empty.Contains(netip.MustParseAddr("10.0.0.1")) || New(nil).Contains(netip.MustParseAddr("::1")) {
		t.Error("an empty set contains an address")
	}
	all := New(prefixes(t, "0.0.0.0/0", "::/0"))
	if !all.Contains(netip.MustParseAddr("255.255.255.255")) || !all.Contains(netip.MustParseAddr("ffff::ffff")) || all.Ranges() != 2 {
		t.Error("/0 prefixes do not hold every address")
	}
}

// TestContainsAgreesWithPrefixes: over random prefixes and addresses the
// merged set answers as checking every prefix does.
func TestContainsAgreesWithPrefixes(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var ps []netip.Prefix
		for range 1 + r.IntN(200) {
			var a netip.Addr
			var bits int
			if r.IntN(2) == 0 {
				a, bits = netip.AddrFrom4([4]byte{10, byte(r.IntN(4)), byte(r.IntN(256)), byte(r.IntN(256))}), 8+r.IntN(25)
			} else {
				var b [16]byte
				b[0], b[1], b[15] = 0x20, 0x01, byte(r.IntN(256))
				b[2] = byte(r.IntN(4))
				a, bits = netip.AddrFrom16(b), 16+r.IntN(113)
			}
			ps = append(ps, netip.PrefixFrom(a, bits))
		}
		s := New(ps)
		for range 2000 {
			var a netip.Addr
			if r.IntN(2) == 0 {
				a = netip.AddrFrom4([4]byte{10, byte(r.IntN(5)), byte(r.IntN(256)), byte(r.IntN(256))})
			} else {
				var b [16]byte
				b[0], b[1], b[2], b[15] = 0x20, 0x01, byte(r.IntN(5)), byte(r.IntN(256))
				a = netip.AddrFrom16(b)
			}
			want := false
			for _, p := range ps {
				if p.Masked().Contains(a) {
					want = true
					break
				}
			}
			if got := s.Contains(a); got != want {
				t.Fatalf("round %d: Contains(%s) = %v, want %v", round, a, got, want)
			}
		}
	}
}

func TestParseList(t *testing.T) {
	t.Parallel()
	got, err := ParseList([]byte("# scanners\n10.0.0.0/8\n\n  192.0.2.1   # one host\r\n2001:db8::/32"))
	if err != nil || len(got) != 3 || got[1] != netip.MustParsePrefix("192.0.2.1/32") {
		t.Fatalf("ParseList = %v, %v", got, err)
	}
	for in, want := range map[string]LineError{
		"10.0.0.0/8\n  10.0.0.300\n": {Line: 2, Col: 3},
		"1.2.3.4/33":                 {Line: 1, Col: 1},
		"\n\nfe80::1%eth0":           {Line: 3, Col: 1},
		"a b":                        {Line: 1, Col: 1},
	} {
		_, err := ParseList([]byte(in))
		var le *LineError
		if !errors.As(err, &le) || le.Line != want.Line || le.Col != want.Col {
			t.Errorf("ParseList(%q) = %v, want an error at %d:%d", in, err, want.Line, want.Col)
		}
	}
}

func FuzzParseList(f *testing.F) {
	f.Add([]byte("10.0.0.0/8\n# c\n2001:db8::1\n"))
	f.Add([]byte("::ffff:1.2.3.4/120 # x"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseList(data)
		if err != nil {
			return
		}
		s := New(ps)
		for _, p := range ps {
			if !s.Contains(p.Addr()) {
				t.Fatalf("the set of %v lacks %s", ps, p.Addr())
			}
		}
	})
}

func BenchmarkContains(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	ps := make([]netip.Prefix, 50000)
	for i := range ps {
		ps[i] = netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(r.IntN(224)), byte(r.IntN(256)), byte(r.IntN(256)), 0}), 24)
	}
	s := New(ps)
	a := netip.MustParseAddr("203.0.113.9")
	b.ReportAllocs()
	for b.Loop() {
		s.Contains(a)
	}
}
