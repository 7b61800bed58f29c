package router

import (
	"net/netip"
	"strings"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/ipset"
)

// accessList is a listener's or route's `allow`/`deny` lists, compiled
// at load time into sets that answer in O(log n) without allocating.
type accessList struct {
	allow *ipset.Set // nil: every client not denied is allowed
	deny  *ipset.Set
}

// compileAccess returns a's lists, or nil when it has none (no work per
// request).
func compileAccess(a conf.Access) *accessList {
	if len(a.Allow) == 0 && len(a.Deny) == 0 {
		return nil
	}
	l := &accessList{deny: ipset.New(a.Deny)}
	if len(a.Allow) > 0 {
		l.allow = ipset.New(a.Allow)
	}
	return l
}

// admits reports whether client may pass: not denied, and allowed when
// there is an allow list.
func (l *accessList) admits(client netip.Addr) bool {
	if l.deny.Contains(client) {
		return false
	}
	return l.allow == nil || l.allow.Contains(client)
}

// accessClient is the address the access lists judge: the peer (after
// the PROXY protocol), or, for a trusted proxy, the last address of
// X-Forwarded-For that is not itself a trusted proxy (the leftmost when
// all are). An entry that is not an address ends the walk: what lies to
// its left cannot be trusted either.
func (x *exchange) accessClient() netip.Addr {
	if !x.trusted {
		return x.peer
	}
	client := x.peer
	h := x.in.Header
	for i := len(h) - 1; i >= 0; i-- {
		if !httpmsg.EqualFold(h[i].Name, "X-Forwarded-For") {
			continue
		}
		v := h[i].Value
		for v != "" {
			entry := v
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				v = ""
			}
			a, ok := forwardedAddr(strings.TrimSpace(entry))
			if !ok {
				return client
			}
			client = a
			if !x.l.trusts(a) {
				return a
			}
		}
	}
	return client
}

// forwardedAddr reads one X-Forwarded-For entry: an address, or an
// address with a port ("192.0.2.1:4711", "[2001:db8::1]:4711").
func forwardedAddr(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// denied answers a client an access list refuses.
func (x *exchange) denied() { x.plainError(403) }
