package rule

import (
	"net/netip"
	"strconv"
)

// parseClientIP reads a ClientIP argument: an IP or a CIDR whose host bits
// are ignored. IPv4-mapped IPv6 values are turned into IPv4 ones so that
// they compare equal to IPv4 peers (§3.5). Zones are refused, as Traefik's
// net.ParseIP refuses them.
func parseClientIP(a arg) (netip.Prefix, *Error) {
	if addr, err := netip.ParseAddr(a.val); err == nil && addr.Zone() == "" {
		addr = addr.Unmap()
		return netip.PrefixFrom(addr, addr.BitLen()), nil
	}
	pfx, err := netip.ParsePrefix(a.val)
	if err != nil {
		return netip.Prefix{}, &Error{Offset: a.off, Msg: "ClientIP value " + quote(a.val) + " is neither an IP address nor a CIDR"}
	}
	pfx = pfx.Masked()
	if addr := pfx.Addr(); addr.Is4In6() && pfx.Bits() >= 96 {
		pfx = netip.PrefixFrom(addr.Unmap(), pfx.Bits()-96)
	}
	return pfx, nil
}

// clientIPIn reports whether the peer address ip lies in pfx; zones are
// ignored and IPv4-mapped IPv6 peers count as IPv4.
func clientIPIn(pfx netip.Prefix, ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	return pfx.Contains(ip.Unmap().WithZone(""))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// asciiEqualFold is strings.EqualFold restricted to ASCII letters, so that
// no non-ASCII byte (the Kelvin sign, long s...) equals an ASCII one.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func quote(s string) string { return strconv.Quote(s) }
