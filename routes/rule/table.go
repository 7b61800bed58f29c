package rule

import (
	"fmt"
	"math"
	"slices"
)

// maxStackLists is how many candidate lists a match gathers without
// allocating; more spill to the heap.
const maxStackLists = 32

// table is what HTTPTable and TCPTable share: routes sorted by priority
// (descending, ties in entry order), each known by its rank in that order,
// and the index that finds a request's candidate ranks.
type table[R any] struct {
	fns   []func(*R) bool // by rank
	index []int           // entry index by rank
	hosts *hostIndex
}

// rankOrder returns entry indexes sorted by priority, descending, ties in
// entry order.
func rankOrder(entries []Entry) []int {
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := entries[a].Priority, entries[b].Priority
		switch {
		case pa > pb:
			return -1
		case pa < pb:
			return 1
		}
		return 0
	})
	return order
}

func checkEntries(entries []Entry, kind Kind) error {
	if len(entries) > math.MaxInt32 {
		return fmt.Errorf("too many routes: %d", len(entries))
	}
	for i, e := range entries {
		if e.Rule == nil {
			return fmt.Errorf("entry %d: nil rule", i)
		}
		if e.Rule.kind != kind {
			return fmt.Errorf("entry %d: %s rule %q in a %s table", i, e.Rule.kind, e.Rule.text, kind)
		}
	}
	return nil
}

// match evaluates the candidates in rank order and returns the entry index
// of the first that matches, or -1. lists are sorted rank lists; a rank in
// several of them is evaluated once.
func (t *table[R]) match(req *R, lists [][]int32) int {
	last := int32(-1)
	for {
		best, rank := -1, int32(math.MaxInt32)
		for i, l := range lists {
			if len(l) > 0 && l[0] < rank {
				best, rank = i, l[0]
			}
		}
		if best < 0 {
			return -1
		}
		lists[best] = lists[best][1:]
		if rank == last {
			continue
		}
		last = rank
		if t.fns[rank](req) {
			return t.index[rank]
		}
	}
}

// HTTPTable picks the highest-priority matching HTTP route. It is
// immutable and safe for concurrent use.
type HTTPTable struct{ t table[HTTPRequest] }

// NewHTTPTable builds the index for entries (all of Kind HTTP).
func NewHTTPTable(entries []Entry) (*HTTPTable, error) {
	if err := checkEntries(entries, HTTP); err != nil {
		return nil, fmt.Errorf("building HTTP table: %w", err)
	}
	ht := &HTTPTable{t: table[HTTPRequest]{hosts: newHostIndex()}}
	for rank, i := range rankOrder(entries) {
		r := entries[i].Rule
		ht.t.fns = append(ht.t.fns, r.http)
		ht.t.index = append(ht.t.index, i)
		ht.t.hosts.add(int32(rank), extract(r.tree, httpHostKeys), extract(r.tree, httpPathKeys))
	}
	return ht, nil
}

// Match returns the index in entries of the route that serves req, or -1.
// req.Host must be canonical (CanonicalHost: lower-cased, port stripped),
// as HTTPRequest documents: the index is keyed by lower-case hosts. Match
// allocates nothing.
func (ht *HTTPTable) Match(req *HTTPRequest) int {
	var buf [maxStackLists][]int32
	lists := ht.t.hosts.collect(req.Host, req.Path, buf[:0])
	return ht.t.match(req, lists)
}

// TCPTable picks the highest-priority matching TCP route. It is immutable
// and safe for concurrent use.
type TCPTable struct{ t table[TCPHello] }

// NewTCPTable builds the index for entries (all of Kind TCP).
func NewTCPTable(entries []Entry) (*TCPTable, error) {
	if err := checkEntries(entries, TCP); err != nil {
		return nil, fmt.Errorf("building TCP table: %w", err)
	}
	tt := &TCPTable{t: table[TCPHello]{hosts: newHostIndex()}}
	for rank, i := range rankOrder(entries) {
		r := entries[i].Rule
		tt.t.fns = append(tt.t.fns, r.tcp)
		tt.t.index = append(tt.t.index, i)
		tt.t.hosts.add(int32(rank), extract(r.tree, tcpHostKeys), anyKeys)
	}
	return tt, nil
}

// Match returns the index in entries of the route that serves h, or -1.
func (tt *TCPTable) Match(h *TCPHello) int {
	var buf [maxStackLists][]int32
	lists := tt.t.hosts.collect(lowerASCIIString(h.SNI), "", buf[:0])
	return tt.t.match(h, lists)
}

// lowerASCIIString lower-cases the ASCII letters of s, allocating only when
// it has upper-case ones.
func lowerASCIIString(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerASCII(b[j])
			}
			return string(b)
		}
	}
	return s
}
