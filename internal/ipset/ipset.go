// Package ipset is a set of IP addresses built from prefixes (CIDRs) for
// access lists: the prefixes are merged into sorted, disjoint ranges at
// load time, so that a lookup is one binary search, O(log n), with no
// allocation, whatever the number of entries. IPv4 and IPv4-mapped IPv6
// addresses are one family; zones are ignored.
package ipset

import (
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Set is an immutable set of addresses. The zero value and nil are empty.
type Set struct {
	v4 []span[uint32]
	v6 []span[u128]
}

// span is a closed range of addresses, lo <= hi.
type span[T any] struct{ lo, hi T }

// u128 is an IPv6 address as two big-endian halves.
type u128 struct{ hi, lo uint64 }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

// next is a+1, and false when a is the last address.
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return a, false
}

func v6(a netip.Addr) u128 {
	b := a.As16()
	var x u128
	for i := range 8 {
		x.hi = x.hi<<8 | uint64(b[i])
		x.lo = x.lo<<8 | uint64(b[8+i])
	}
	return x
}

func v4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// mapped is the first IPv4-mapped IPv6 address.
var mapped = netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff})

// New returns the set of the addresses in prefixes. A prefix's host bits
// are ignored (10.1.2.3/8 is 10.0.0.0/8); an IPv4-mapped IPv6 prefix
// counts as its IPv4 one.
func New(prefixes []netip.Prefix) *Set {
	s := &Set{}
	for _, p := range prefixes {
		if !p.IsValid() {
			continue
		}
		a, bits := p.Addr(), p.Bits()
		if a.Is4In6() && bits >= 96 {
			a, bits = a.Unmap(), bits-96
		}
		p = netip.PrefixFrom(a.WithZone(""), bits).Masked()
		if p.Addr().Is4() {
			lo := v4(p.Addr())
			hi := lo | uint32(uint64(1)<<(32-p.Bits())-1)
			s.v4 = append(s.v4, span[uint32]{lo, hi})
			continue
		}
		if p.Contains(mapped) {
			// It holds every IPv4-mapped address, which Contains looks
			// up as IPv4.
			s.v4 = append(s.v4, span[uint32]{0, ^uint32(0)})
		}
		lo := v6(p.Addr())
		hi := lo
		if host := 128 - p.Bits(); host >= 64 {
			hi.lo = ^uint64(0)
			hi.hi |= uint64(1)<<(host-64) - 1
			if host == 128 {
				hi.hi = ^uint64(0)
			}
		} else if host > 0 {
			hi.lo |= uint64(1)<<host - 1
		}
		s.v6 = append(s.v6, span[u128]{lo, hi})
	}
	s.v4 = merge(s.v4, cmp.Compare[uint32], func(a uint32) (uint32, bool) { return a + 1, a != ^uint32(0) })
	s.v6 = merge(s.v6, u128.cmp, u128.next)
	return s
}

// merge sorts spans and joins the overlapping and adjacent ones.
func merge[T any](spans []span[T], c func(a, b T) int, next func(T) (T, bool)) []span[T] {
	slices.SortFunc(spans, func(a, b span[T]) int { return c(a.lo, b.lo) })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 {
			last := &out[n-1]
			after, ok := next(last.hi)
			if !ok || c(sp.lo, after) <= 0 { // overlaps or touches
				if c(sp.hi, last.hi) > 0 {
					last.hi = sp.hi
				}
				continue
			}
		}
		out = append(out, sp)
	}
	return slices.Clip(out)
}

// Contains reports whether a is in the set.
func (s *Set) Contains(a netip.Addr) bool {
	if s == nil || !a.IsValid() {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		return find(s.v4, v4(a), cmp.Compare[uint32])
	}
	return find(s.v6, v6(a), u128.cmp)
}

// find reports whether x lies in one of the sorted, disjoint spans.
func find[T any](spans []span[T], x T, c func(a, b T) int) bool {
	// The first span whose hi is not below x holds x if any does.
	i, _ := slices.BinarySearchFunc(spans, x, func(sp span[T], x T) int { return c(sp.hi, x) })
	return i < len(spans) && c(spans[i].lo, x) <= 0
}

// Ranges returns how many disjoint ranges the set holds (after merging).
func (s *Set) Ranges() int {
	if s == nil {
		return 0
	}
	return len(s.v4) + len(s.v6)
}

// ParsePrefix reads an address ("192.0.2.1", "2001:db8::1") as its
// one-address prefix, or a CIDR ("192.0.2.0/24"); host bits are allowed
// and ignored.
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("invalid CIDR %q", s)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("invalid address %q (expected an IP address or a CIDR such as 10.0.0.0/8)", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// LineError is a bad line of a list file.
type LineError struct {
	Line int // from 1
	Col  int // from 1
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%d:%d: %v", e.Line, e.Col, e.Err) }

// ParseList reads a list file: one address or CIDR per line; blank
// lines and everything from a '#' are ignored, as are spaces around an
// entry. The first bad line is a *LineError.
func ParseList(data []byte) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		trimmed := bytes.TrimLeft(line, " \t\r")
		col := len(line) - len(trimmed) + 1
		entry := bytes.TrimRight(trimmed, " \t\r")
		if len(entry) == 0 {
			continue
		}
		p, err := ParsePrefix(string(entry))
		if err != nil {
			return nil, &LineError{Line: n, Col: col, Err: err}
		}
		out = append(out, p)
	}
	return out, nil
}
