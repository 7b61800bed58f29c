package router

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
	"github.com/edgeway/edgeway/internal/panics"
	"github.com/edgeway/edgeway/upstream"
)

// Traffic split (conf.Split): a route that shares its requests among
// pools. At load each split route gets one variant per pool, a shallow
// copy of the route pointing at that pool, and a schedule: the smooth
// weighted round robin sequence of the shares, reduced by their greatest
// common divisor, so that every cycle (at most 10,000 requests) places
// exactly each pool's share and the picks are spread evenly inside it (95%
// and 5% is a cycle of 20 with one pick of the second pool). A request
// costs an atomic load of the live schedule and one atomic add.
//
// What must outlive a reload (the admin API's shares, the pools the
// rollback set to 0, the rollback windows and the counters) lives in a
// splitControl kept by route name; a reload that keeps the route and its
// set of pools keeps it, one that changes them starts afresh (the
// override is dropped, and cmd/edgeway logs it).

// ErrUnknownSplit is returned (wrapped) for a route that does not split
// its traffic.
var ErrUnknownSplit = errors.New("no such split route")

// ErrBadSplit is returned (wrapped) for shares that name other pools
// than the route's or do not add up to 100%.
var ErrBadSplit = errors.New("invalid shares")

// splitRegistry is the Router's splitControls by route name.
type splitRegistry struct {
	byName map[string]*splitControl // guarded by Router.mu
	view   atomic.Pointer[map[string]*splitControl]
	// hook is called (on its own goroutine) after a rollback changed a
	// split: cmd/edgeway saves the journal.
	hook atomic.Pointer[func(route string)]
}

// splitControl is one split route's runtime state.
type splitControl struct {
	route string
	log   *slog.Logger
	reg   *splitRegistry

	mu         sync.Mutex // serialises changes; the hot path only loads live
	pools      []string   // as configured
	configured []int      // shares as configured, in basis points
	override   []int      // the admin API's shares; nil: none
	rolledBack []time.Time
	rollback   *conf.Rollback // nil: none
	sticky     string         // "cookie NAME", "header NAME" or ""
	counters   []*splitCounters
	live       atomic.Pointer[splitState]
}

// splitCounters count one pool's requests through a split: since start,
// and over the rollback window.
type splitCounters struct {
	requests  atomic.Uint64
	rollbacks atomic.Uint64
	window    failWindow
}

// splitState is the live placement: the shares in effect and their
// schedule. It is immutable but for next.
type splitState struct {
	pools    []string
	shares   []int
	schedule []uint8 // pool indexes; empty: no pool has a share
	cum      []int   // cumulative shares, for the sticky header's hash
	counters []*splitCounters
	rollback *conf.Rollback // nil: none
	next     atomic.Uint64
}

// splitVariant is what a variant knows of its split.
type splitVariant struct {
	sp  *splitter
	idx int            // the pool's index in the split
	cnt *splitCounters // the pool's counters
}

// splitter is a split route's compiled part: its variants and how a
// client sticks.
type splitter struct {
	ctl      *splitControl
	variants []*route
	cookie   string   // sticky cookie name; "" none
	header   string   // sticky header name; "" none
	setCk    []string // per pool, the Set-Cookie value pinning a client to it
}

// compileSplit makes rt's variants; attachSplits gives them their pools
// and state.
func compileSplit(rt *route, s *conf.Split) *splitter {
	sp := &splitter{}
	if st := s.Sticky; st != nil {
		sp.cookie, sp.header = st.Cookie, st.Header
	}
	for i, p := range s.Pools {
		v := *rt
		v.upstream, v.split, v.splitOf = p.Upstream, nil, &splitVariant{sp: sp, idx: i}
		sp.variants = append(sp.variants, &v)
		if sp.cookie != "" {
			sp.setCk = append(sp.setCk, sp.cookie+"="+p.Upstream+"; Path=/; HttpOnly; SameSite=Lax")
		}
	}
	return sp
}

// targets returns the routes requests of rt go out on: its variants for
// a split, else rt itself.
func (rt *route) targets() []*route {
	if rt.split != nil {
		return rt.split.variants
	}
	return []*route{rt}
}

// attachSplits connects the split routes of s to their controls, kept
// across reloads in reg, and gives the variants their pools (and what
// Apply attached to the route since it was compiled).
func (s *Snapshot) attachSplits(reg *splitRegistry, cfg *conf.Config, log *slog.Logger, pools map[string]*upstream.Pool) {
	byRoute := map[string]*conf.Split{}
	for i := range cfg.Routes {
		if sp := cfg.Routes[i].Split; sp != nil {
			byRoute[cfg.Routes[i].Name] = sp
		}
	}
	next := map[string]*splitControl{}
	for _, hl := range s.http {
		for _, rt := range hl.routes {
			if rt.split == nil {
				continue
			}
			ctl := next[rt.name]
			if ctl == nil {
				ctl = reg.byName[rt.name]
				if ctl == nil {
					ctl = &splitControl{route: rt.name, log: log, reg: reg}
				}
				ctl.configure(byRoute[rt.name])
				next[rt.name] = ctl
			}
			rt.split.ctl = ctl
			counters := ctl.live.Load().counters
			for _, v := range rt.split.variants {
				up, sv := v.upstream, v.splitOf
				sv.cnt = counters[sv.idx]
				*v = *rt
				v.upstream, v.pool, v.split, v.splitOf = up, pools[up], nil, sv
			}
		}
	}
	reg.byName = next
	reg.view.Store(&next)
}

// configure takes a (re)loaded split: the same pools, in any order, keep
// the override, the rolled-back pools and the counters; when the set of
// pools changed, the override and the rollbacks go, and a new pool starts
// with no counts.
func (c *splitControl) configure(s *conf.Split) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, len(s.Pools))
	shares := make([]int, len(s.Pools))
	for i, p := range s.Pools {
		names[i], shares[i] = p.Upstream, p.Share
	}
	if !slices.Equal(names, c.pools) {
		old := make(map[string]int, len(c.pools))
		for i, n := range c.pools {
			old[n] = i
		}
		counters := make([]*splitCounters, len(names))
		rolledBack := make([]time.Time, len(names))
		var override []int
		if c.override != nil {
			override = make([]int, len(names))
		}
		reordered := len(names) == len(c.pools)
		for i, n := range names {
			j, ok := old[n]
			if !ok {
				counters[i], reordered = &splitCounters{}, false
				continue
			}
			counters[i], rolledBack[i] = c.counters[j], c.rolledBack[j]
			if override != nil {
				override[i] = c.override[j]
			}
		}
		// The same pools in another order keep the override and the
		// rollbacks, each with its pool; other pools start afresh.
		if !reordered {
			override, rolledBack = nil, make([]time.Time, len(names))
		}
		c.counters, c.override, c.rolledBack = counters, override, rolledBack
	}
	c.pools, c.configured, c.rollback, c.sticky = names, shares, s.Rollback, ""
	if st := s.Sticky; st != nil && st.Cookie != "" {
		c.sticky = "cookie " + st.Cookie
	} else if st != nil {
		c.sticky = "header " + st.Header
	}
	c.publish()
}

// publish builds the live state from the shares in effect. c.mu held.
func (c *splitControl) publish() {
	shares := slices.Clone(c.configured)
	if c.override != nil {
		shares = slices.Clone(c.override)
	}
	for i, t := range c.rolledBack {
		if !t.IsZero() {
			shares[i] = 0
		}
	}
	st := &splitState{pools: c.pools, shares: shares, schedule: schedule(shares), cum: make([]int, len(shares)),
		counters: c.counters, rollback: c.rollback}
	sum := 0
	for i, v := range shares {
		sum += v
		st.cum[i] = sum
	}
	c.live.Store(st)
}

// schedule is the smooth weighted round robin sequence of shares reduced
// by their greatest common divisor: one cycle places each pool exactly
// its share, spread as evenly as the counts allow.
func schedule(shares []int) []uint8 {
	g := 0
	for _, s := range shares {
		g = gcd(g, s)
	}
	if g == 0 {
		return nil
	}
	w := make([]int, len(shares))
	total := 0
	for i, s := range shares {
		w[i] = s / g
		total += w[i]
	}
	cur := make([]int, len(w))
	out := make([]uint8, total)
	for k := range out {
		best := -1
		for i := range w {
			if w[i] == 0 {
				continue
			}
			cur[i] += w[i]
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out[k] = uint8(best)
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// pickSplit places the request on one of the split's pools: the pool its
// sticky cookie or header names, else the next in the schedule. x.rt
// becomes that pool's variant.
func (x *exchange) pickSplit() {
	sp := x.rt.split
	st := sp.ctl.live.Load()
	if len(st.schedule) == 0 {
		return // no pool has a share: the first pool's (rollback keeps one)
	}
	i := -1
	switch {
	case sp.cookie != "":
		if v := cookieValue(x.in.Header, sp.cookie); v != "" {
			for k, p := range st.pools {
				if p == v && st.shares[k] > 0 {
					i = k
				}
			}
		}
		if i < 0 {
			i = int(st.schedule[(st.next.Add(1)-1)%uint64(len(st.schedule))])
			x.splitCookie = sp.setCk[i]
		}
	case sp.header != "":
		if v := x.in.Header.Get(sp.header); v != "" {
			h := fnv1a(v) % conf.ShareScale
			for k, c := range st.cum {
				if h < uint64(c) {
					i = k
					break
				}
			}
		}
	}
	if i < 0 {
		i = int(st.schedule[(st.next.Add(1)-1)%uint64(len(st.schedule))])
	}
	st.counters[i].requests.Add(1)
	if i < len(sp.variants) && sp.variants[i].upstream == st.pools[i] {
		x.rt = sp.variants[i]
	} // else a reload changed the pools under this request: the first
}

// fnv1a is the 64-bit FNV-1a hash of s: the same on every instance and
// across restarts, so a sticky header keeps its pool.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// splitCookieHeader adds the sticky cookie of a request the split just
// placed.
func (x *exchange) splitCookieHeader(h httpmsg.Header) httpmsg.Header {
	if x.splitCookie != "" {
		h = append(h, httpmsg.Field{Name: "Set-Cookie", Value: x.splitCookie})
	}
	return h
}

// recordSplit reports the finished request of a split route to its
// pool's rollback window. A client's mistake (4xx) or abort counts
// neither way; 5xx answers and upstream failures (502, 503, 504) count as
// failures.
func (x *exchange) recordSplit() {
	if x.rt == nil || x.rt.splitOf == nil || x.rt.splitOf.sp.ctl == nil {
		return
	}
	sv := x.rt.splitOf
	c := sv.sp.ctl
	st := c.live.Load()
	rb := st.rollback
	if rb == nil || x.outcome == upstream.Abandoned {
		return
	}
	status := x.logStatus()
	if status >= 400 && status < 500 || status == 0 {
		return
	}
	fail := status >= 500
	sv.cnt.window.add(x.start, rb.Window, fail)
	if fail && sv.idx < len(st.pools) && st.pools[sv.idx] == x.rt.upstream {
		c.checkRollback(st, sv.idx, x.start)
	}
}

// checkRollback sets pool i's share to 0 when its failure rate over the
// window exceeds the other pools' together by more than the margin, with
// enough requests, and another pool still has a share.
func (c *splitControl) checkRollback(st *splitState, i int, now time.Time) {
	rb, counters := st.rollback, st.counters
	total, fails := counters[i].window.sum(now, rb.Window)
	if total < uint64(rb.MinRequests) {
		return
	}
	var oTotal, oFails uint64
	for k, ct := range counters {
		if k != i {
			t, f := ct.window.sum(now, rb.Window)
			oTotal, oFails = oTotal+t, oFails+f
		}
	}
	rate, others := float64(fails)/float64(total), 0.0
	if oTotal > 0 {
		others = float64(oFails) / float64(oTotal)
	}
	if rate-others <= rb.ErrorRate {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st != c.live.Load() || !c.rolledBack[i].IsZero() || st.shares[i] == 0 {
		return
	}
	rest := 0
	for k, s := range st.shares {
		if k != i {
			rest += s
		}
	}
	if rest == 0 {
		c.log.Warn("split rollback not applied: no other pool has a share", "route", c.route, "upstream", c.pools[i],
			"error_rate", rate, "others_error_rate", others)
		return
	}
	c.rolledBack[i] = now
	counters[i].rollbacks.Add(1)
	c.publish()
	c.log.Warn("split rollback: pool's share set to 0", "route", c.route, "upstream", c.pools[i],
		"error_rate", fmt.Sprintf("%.2f%%", rate*100), "others_error_rate", fmt.Sprintf("%.2f%%", others*100),
		"requests", total, "window", rb.Window)
	if h := c.reg.hook.Load(); h != nil {
		route := c.route
		panics.Go("split rollback hook", func() { (*h)(route) })
	}
}

// failWindow counts requests and failures over a sliding window of
// windowBuckets buckets. Buckets are reset by the first request of their
// time slot; a request racing that reset may be lost, which a rate over
// hundreds of requests does not notice.
type failWindow struct {
	buckets [windowBuckets]failBucket
}

const windowBuckets = 10

type failBucket struct {
	slot         atomic.Int64
	total, fails atomic.Uint64
}

func (w *failWindow) add(now time.Time, span time.Duration, fail bool) {
	slot := now.UnixNano() / int64(span/windowBuckets)
	b := &w.buckets[slot%windowBuckets]
	if old := b.slot.Load(); old != slot && b.slot.CompareAndSwap(old, slot) {
		b.total.Store(0)
		b.fails.Store(0)
	}
	b.total.Add(1)
	if fail {
		b.fails.Add(1)
	}
}

func (w *failWindow) sum(now time.Time, span time.Duration) (total, fails uint64) {
	slot := now.UnixNano() / int64(span/windowBuckets)
	for k := range w.buckets {
		b := &w.buckets[k]
		if s := b.slot.Load(); s > slot-windowBuckets && s <= slot {
			total += b.total.Load()
			fails += b.fails.Load()
		}
	}
	return total, fails
}
