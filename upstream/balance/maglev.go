package balance

import "hash/fnv"

// Maglev is consistent hashing by a Maglev lookup table (Eisenbud et al.,
// NSDI 2016, with Envoy's weighting): each server fills table slots in the
// order of its own permutation, heavier servers more often, so a key maps
// to table[key % size] in O(1) and adding or removing one of N servers
// moves about 1/N of the keys. When the chosen server cannot take traffic
// (weight 0 at this pick), the key probes further slots in a fixed order
// of its own, so its fallback is stable and the keys of a failed server
// spread over the others.
type Maglev struct {
	table []int32
}

// maglevSize picks a prime table size with at least 100 slots per server
// (the paper's advice for an even spread). The size moves in large steps
// only, because a new size remaps every key: 65537 (Envoy's default)
// serves up to 655 servers.
func maglevSize(n int) int {
	for _, p := range []int{65537, 655373, 6553621} {
		if p >= 100*n {
			return p
		}
	}
	return 6553621
}

// NewMaglev builds the table for servers named by ids (stable names, such
// as addresses: the table depends on them, not on their order) with the
// given weights; a server of weight 0 gets no slot.
func NewMaglev(ids []string, weights []int) *Maglev {
	m := &Maglev{table: make([]int32, maglevSize(len(ids)))}
	for i := range m.table {
		m.table[i] = -1
	}
	size := uint64(len(m.table))
	type entry struct {
		offset, skip, next uint64
		weight, target     float64
	}
	maxW := 0
	for _, w := range weights {
		maxW = max(maxW, w)
	}
	if maxW == 0 {
		return m
	}
	entries := make([]entry, len(ids))
	for i, id := range ids {
		h1, h2 := hashString(id, 0x9e3779b97f4a7c15), hashString(id, 0xc2b2ae3d27d4eb4f)
		entries[i] = entry{offset: h1 % size, skip: h2%(size-1) + 1, weight: float64(weights[i]) / float64(maxW)}
	}
	filled := 0
	for iter := 1.0; filled < len(m.table); iter++ {
		for i := range entries {
			e := &entries[i]
			if e.weight == 0 || iter*e.weight+1e-9 < e.target {
				continue
			}
			e.target++
			c := (e.offset + e.skip*e.next) % size
			for m.table[c] >= 0 {
				e.next++
				c = (e.offset + e.skip*e.next) % size
			}
			m.table[c] = int32(i)
			e.next++
			if filled++; filled == len(m.table) {
				break
			}
		}
	}
	return m
}

// Next returns the server for key, or the first that can serve in key's
// probe order, or -1.
func (m *Maglev) Next(s Servers, key uint64) int {
	size := uint64(len(m.table))
	slot, step := key%size, (key>>32)%(size-1)+1
	// Enough probes to meet every server with high probability; a scan
	// settles the rest.
	for range 64 {
		if i := m.table[slot]; i >= 0 && s.Weight(int(i)) > 0 {
			return int(i)
		}
		slot = (slot + step) % size
	}
	for i := range s.Len() {
		j := (int(key%uint64(s.Len())) + i) % s.Len()
		if s.Weight(j) > 0 {
			return j
		}
	}
	return -1
}

// Lookup returns the server key maps to when every server can serve (for
// tests and tools), or -1 for an empty table.
func (m *Maglev) Lookup(key uint64) int { return int(m.table[key%uint64(len(m.table))]) }

func hashString(s string, seed uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(seed >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(s))
	return mix(h.Sum64())
}

// mix is a 64-bit finaliser (splitmix64) that spreads FNV's low bits.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Key hashes a request key (a header value, a path) for Next, without
// allocating.
func Key(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix(h)
}

// KeyBytes is Key for a byte slice (an IP address).
func KeyBytes(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return mix(h)
}
