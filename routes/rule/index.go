package rule

import "strings"

// The index of a table. Each rule yields, at build time, a conservative set
// of host keys and of path keys: if the rule matches a request, the request's
// host and path hit one of them. A route is filed under every (host key, path
// key) pair; a request gathers the routes filed under its own host and path
// and evaluates only those. "Any" stands for "no key could be derived".

type keyKind uint8

const (
	hostExact  keyKind = iota // the lower-cased host equals val
	hostWild                  // the lower-cased host after its first label equals val
	pathExact                 // the routing path equals val
	pathPrefix                // the routing path starts with val
)

type key struct {
	kind keyKind
	val  string
}

// keySet is a disjunction of keys; any means the rule constrains nothing.
type keySet struct {
	any  bool
	keys []key
}

var anyKeys = keySet{any: true}

// extract derives n's key set for one dimension, leafKeys giving the keys
// of a single, non-negated matcher. Under &&, one side's keys suffice (the
// smaller set is kept); under ||, both sides need keys.
func extract(n *node, leafKeys func(*leaf) keySet) keySet {
	switch n.op {
	case opAnd:
		l, r := extract(n.left, leafKeys), extract(n.right, leafKeys)
		if l.any || (!r.any && len(r.keys) < len(l.keys)) {
			return r
		}
		return l
	case opOr:
		l, r := extract(n.left, leafKeys), extract(n.right, leafKeys)
		if l.any || r.any {
			return anyKeys
		}
		// Key sets are built fresh for each call, so l's may be extended.
		return keySet{keys: append(l.keys, r.keys...)}
	}
	if n.leaf.not {
		return anyKeys
	}
	return leafKeys(n.leaf)
}

// httpHostKeys gives the host keys of Host(v); the request side looks up
// its host with and without a trailing dot, which covers §4.1's three tries.
func httpHostKeys(l *leaf) keySet {
	if l.spec.name != "Host" || l.args[0] == "*" {
		return anyKeys
	}
	return hostKeys(strings.ToLower(l.args[0]))
}

// tcpHostKeys gives the host keys of HostSNI(h).
func tcpHostKeys(l *leaf) keySet {
	if l.spec.name != "HostSNI" || l.args[0] == "*" {
		return anyKeys
	}
	return hostKeys(strings.ToLower(l.args[0]))
}

// hostKeys files a lower-cased host value under itself and under itself
// without a trailing dot; a value starting with '*' is a wildcard key.
func hostKeys(v string) keySet {
	var ks keySet
	for _, w := range []string{v, strings.TrimSuffix(v, ".")} {
		if rest, ok := strings.CutPrefix(w, "*"); ok {
			ks.keys = append(ks.keys, key{hostWild, rest})
		} else {
			ks.keys = append(ks.keys, key{hostExact, w})
		}
	}
	return ks
}

func httpPathKeys(l *leaf) keySet {
	switch l.spec.name {
	case "Path":
		return keySet{keys: []key{{pathExact, l.args[0]}}}
	case "PathPrefix":
		return keySet{keys: []key{{pathPrefix, l.args[0]}}}
	}
	return anyKeys
}

// hostIndex maps host keys to path indexes.
type hostIndex struct {
	exact    map[string]*pathIndex
	wild     map[string]*pathIndex
	wildLens uint64 // bit len%64 is set for the length of every wild key
	any      pathIndex
}

func newHostIndex() *hostIndex {
	return &hostIndex{exact: map[string]*pathIndex{}, wild: map[string]*pathIndex{}}
}

// add files rank under every pair of hosts and paths. Ranks must be added
// in increasing order so that every list stays sorted.
func (h *hostIndex) add(rank int32, hosts, paths keySet) {
	if hosts.any {
		h.any.add(rank, paths)
		return
	}
	for _, k := range hosts.keys {
		m := h.exact
		if k.kind == hostWild {
			m = h.wild
			h.wildLens |= 1 << (len(k.val) % 64)
		}
		p := m[k.val]
		if p == nil {
			p = &pathIndex{}
			m[k.val] = p
		}
		p.add(rank, paths)
	}
}

// collect appends the candidate lists for a lower-cased host and a path.
func (h *hostIndex) collect(host, path string, out [][]int32) [][]int32 {
	out = h.any.collect(path, out)
	out = h.collectHost(host, path, out)
	if n := len(host) - 1; n >= 0 && host[n] == '.' {
		out = h.collectHost(host[:n], path, out)
	}
	return out
}

func (h *hostIndex) collectHost(host, path string, out [][]int32) [][]int32 {
	if p := h.exact[host]; p != nil {
		out = p.collect(path, out)
	}
	if rest := afterFirstLabel(host); h.wildLens&(1<<(len(rest)%64)) != 0 {
		if p := h.wild[rest]; p != nil {
			out = p.collect(path, out)
		}
	}
	return out
}

// pathIndex holds the routes of one host key: a radix tree over Path and
// PathPrefix values plus those without a path key.
type pathIndex struct {
	root trieNode
	any  []int32
}

func (p *pathIndex) add(rank int32, paths keySet) {
	if paths.any {
		p.any = addRank(p.any, rank)
		return
	}
	for _, k := range paths.keys {
		n := p.root.insert(k.val)
		if k.kind == pathExact {
			n.exact = addRank(n.exact, rank)
		} else {
			n.prefix = addRank(n.prefix, rank)
		}
	}
}

func (p *pathIndex) collect(path string, out [][]int32) [][]int32 {
	if len(p.any) > 0 {
		out = append(out, p.any)
	}
	return p.root.collect(path, out)
}

func addRank(list []int32, rank int32) []int32 {
	if n := len(list); n > 0 && list[n-1] == rank {
		return list
	}
	return append(list, rank)
}
