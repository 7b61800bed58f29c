package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/httpsyntax"
	"github.com/edgeway/edgeway/upstream/balance"
)

// buildPolicy makes the pool's balancer from its configuration and the
// servers' runtime weights. Called at build and, for hash, when a
// runtime weight changes.
func (p *Pool) buildPolicy() {
	n := len(p.servers)
	p.rr = balance.NewSWRR(n)
	p.random = balance.NewRandom(p.rnd)
	switch p.cfg.Balance.Policy {
	case conf.LeastRequest:
		p.policy = balance.NewLeastRequest(p.rnd)
	case conf.Random:
		p.policy = p.random
	case conf.Hash:
		p.policy = p.maglev()
	default:
		p.policy = p.rr
	}
	if p.cfg.Balance.Policy == conf.Sticky {
		p.byID = make(map[string]int, n)
		for i, s := range p.servers {
			p.byID[s.ID] = i
		}
	}
}

// maglev builds the hash table over the servers' runtime weights.
func (p *Pool) maglev() *balance.Maglev {
	ids := make([]string, len(p.servers))
	weights := make([]int, len(p.servers))
	for i, s := range p.servers {
		ids[i], weights[i] = s.Addr, p.baseWeight(s)/weightUnit
	}
	return balance.NewMaglev(ids, weights)
}

// serverID is a server's name in a sticky cookie: stable across restarts
// and instances, opaque (the address is not readable from it).
func serverID(pool, addr string) string {
	sum := sha256.Sum256([]byte("edgeway sticky\x00" + pool + "\x00" + addr))
	return hex.EncodeToString(sum[:8])
}

// pinned returns the server a request's sticky cookie names.
func (p *Pool) pinned(req *httpmsg.Request) (int, bool) {
	if req == nil {
		return 0, false
	}
	v, ok := cookie(req.Header, p.cfg.Balance.Name)
	if !ok {
		return 0, false
	}
	i, ok := p.byID[v]
	return i, ok
}

// StickyCookie returns the Set-Cookie value the router must add to a
// response served by s for a request that did not carry a valid pin to
// it: "" when the pool is not sticky or the request's cookie already names
// s. The cookie is a session cookie, HttpOnly, for path /.
func (p *Pool) StickyCookie(req *httpmsg.Request, s *Server) string {
	if p.cfg.Balance.Policy != conf.Sticky || s == nil {
		return ""
	}
	if req != nil {
		if v, ok := cookie(req.Header, p.cfg.Balance.Name); ok && v == s.ID {
			return ""
		}
	}
	return s.setCookie
}

// cookie finds a cookie's value in the Cookie fields (HTTP/2 may split
// them over several), without allocating.
func cookie(h httpmsg.Header, name string) (string, bool) {
	for _, f := range h {
		if !httpmsg.EqualFold(f.Name, "Cookie") {
			continue
		}
		for v := f.Value; v != ""; {
			var pair string
			pair, v = cut(v, ';')
			pair = httpsyntax.TrimOWS(pair)
			if k, val := cut(pair, '='); k == name && len(pair) > len(k) {
				return trimQuotes(val), true
			}
		}
	}
	return "", false
}

func cut(s string, c byte) (string, string) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

func trimQuotes(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// hashKey returns the hash of the request's key for `balance hash`;
// ok=false when the request has none (no such header or cookie).
func (p *Pool) hashKey(req *httpmsg.Request) (uint64, bool) {
	if req == nil {
		return 0, false
	}
	b := p.cfg.Balance
	switch b.HashKey {
	case conf.HashHeader:
		if v := req.Header.Get(b.Name); v != "" {
			return balance.Key(v), true
		}
	case conf.HashCookie:
		if v, ok := cookie(req.Header, b.Name); ok && v != "" {
			return balance.Key(v), true
		}
	case conf.HashClientIP:
		if a := req.RemoteAddr.Addr(); a.IsValid() {
			return ipKey(a), true
		}
	case conf.HashPath:
		return balance.Key(req.Path()), true
	}
	return 0, false
}

func ipKey(a netip.Addr) uint64 {
	b := a.Unmap().As16()
	return balance.KeyBytes(b[:])
}
