// Package ratelimit is a keyed rate limiter with the generic cell rate
// algorithm (GCRA, a token bucket kept as one timestamp per key): exact
// under concurrency, one small record per key, and a bounded number of
// keys. Keys are spread over shards, each with its own lock, so that
// requests for different keys seldom wait on each other.
package ratelimit

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

const shards = 64

// Limiter admits requests at Rate per Per with bursts of Burst, per key.
type Limiter struct {
	rated     bool  // a rate applies (else only the concurrency cap)
	maxFlight int32 // requests in flight per key; 0: no cap
	interval  int64 // ns between requests at the sustained rate
	tolerance int64 // how far ahead of now a key's TAT may run: (burst-1) * interval
	maxPer    int   // keys a shard keeps
	seed      maphash.Seed
	shard     [shards]shard

	// per, rate and burst are the whole limit, which members divides.
	per         time.Duration
	rate, burst int
	members     atomic.Pointer[func() int]

	allowed, limited, evicted atomic.Int64
}

// shard is a part of the keys. Buckets are pointers so that an update
// never assigns to the map: assigning to an existing string key stores
// the new key, and a caller's key may view a buffer it reuses.
type shard struct {
	mu   sync.Mutex
	tats map[string]*bucket
}

// bucket is one key's theoretical arrival time (ns, monotonic) and, with
// a concurrency cap, its requests in flight.
type bucket struct {
	tat      int64
	inFlight atomic.Int32
}

// Slot is a request's place under a key's concurrency cap; Release gives
// it back. The zero Slot holds nothing.
type Slot struct{ b *bucket }

// Release ends the request's hold; it must be called once.
func (s Slot) Release() {
	if s.b != nil {
		s.b.inFlight.Add(-1)
	}
}

// New returns a limiter of rate requests per per (0: no rate), bursts of
// burst (at least 1) and at most maxKeys keys (at least one per shard).
func New(rate int, per time.Duration, burst, maxKeys int) *Limiter {
	return NewWithCap(rate, per, burst, maxKeys, 0)
}

// NewWithCap is New with at most maxInFlight requests of a key at once
// (0: no cap); Acquire takes the slots.
func NewWithCap(rate int, per time.Duration, burst, maxKeys, maxInFlight int) *Limiter {
	burst = max(burst, 1)
	l := &Limiter{rated: rate > 0, maxFlight: int32(maxInFlight), interval: int64(per) / int64(max(rate, 1)),
		maxPer: max(maxKeys/shards, 1), seed: maphash.MakeSeed(), per: per, rate: max(rate, 1), burst: burst}
	l.tolerance = int64(burst-1) * l.interval
	for i := range l.shard {
		l.shard[i].tats = map[string]*bucket{}
	}
	return l
}

var epoch = time.Now()

// now is a monotonic clock in ns.
func now() int64 { return int64(time.Since(epoch)) }

// Decision is the outcome of one request.
type Decision struct {
	Allowed bool
	// Remaining is how many more requests the key may make now.
	Remaining int
	// RetryAfter is how long until a refused request would be admitted;
	// Reset how long until the key's bucket is full again.
	RetryAfter, Reset time.Duration
}

// Allow counts one request for key. key may view a buffer: it is copied
// only when a new key is stored.
func (l *Limiter) Allow(key string) Decision {
	d, _ := l.acquireAt(key, now())
	return d
}

// Acquire is Allow for a limiter with a concurrency cap: an admitted
// request holds a slot of its key until it calls Release on it (nil
// without a cap). A key at its cap is refused with RetryAfter 1s.
func (l *Limiter) Acquire(key string) (Decision, Slot) {
	return l.acquireAt(key, now())
}

func (l *Limiter) allowAt(key string, t int64) Decision {
	d, _ := l.acquireAt(key, t)
	return d
}

// SetMembers makes the limiter enforce its share of the limit among the
// instances that members counts (a cluster's live members): rate/n and
// burst/n (at least 1) for n = members(), read on each request, so
// members must be cheap (an atomic load, never a remote call); n < 1
// counts as 1. Nil: the whole limit here.
func (l *Limiter) SetMembers(members func() int) {
	if members == nil {
		l.members.Store(nil)
		return
	}
	l.members.Store(&members)
}

// share returns the interval and tolerance of this instance's share.
func (l *Limiter) share() (interval, tolerance int64) {
	f := l.members.Load()
	if f == nil {
		return l.interval, l.tolerance
	}
	n := (*f)()
	if n <= 1 {
		return l.interval, l.tolerance
	}
	interval = int64(l.per) * int64(n) / int64(l.rate)
	return interval, int64(max(l.burst/n, 1)-1) * interval
}

func (l *Limiter) acquireAt(key string, t int64) (Decision, Slot) {
	interval, tolerance := l.share()
	s := &l.shard[maphash.String(l.seed, key)%shards]
	s.mu.Lock()
	b := s.tats[key]
	tat := t
	if b != nil && b.tat > t {
		tat = b.tat
	}
	if allowAt := tat - tolerance; l.rated && t < allowAt {
		s.mu.Unlock()
		l.limited.Add(1)
		return Decision{RetryAfter: time.Duration(allowAt - t), Reset: time.Duration(tat - t)}, Slot{}
	}
	if l.maxFlight > 0 && b != nil && b.inFlight.Load() >= l.maxFlight {
		s.mu.Unlock()
		l.limited.Add(1)
		return Decision{RetryAfter: time.Second}, Slot{}
	}
	if l.rated {
		tat += interval
	}
	if b != nil {
		b.tat = tat
	} else {
		if len(s.tats) >= l.maxPer {
			s.evict(t)
			l.evicted.Add(1)
		}
		b = &bucket{tat: tat}
		s.tats[string([]byte(key))] = b // a copy: key may view a buffer
	}
	var slot Slot
	if l.maxFlight > 0 {
		b.inFlight.Add(1)
		slot = Slot{b}
	}
	s.mu.Unlock()
	l.allowed.Add(1)
	d := Decision{Allowed: true}
	if l.rated {
		d.Remaining, d.Reset = int((t+tolerance-(tat-interval))/interval), time.Duration(tat-t)
	}
	return d, slot
}

// evict drops one key to make room: of a few sampled (map order is
// random) and not held by requests in flight, one whose bucket is already
// full again (nothing is lost), else the one closest to full. Under s.mu.
func (s *shard) evict(t int64) {
	var victim string
	found, best, n := false, int64(1<<63-1), 0
	for k, b := range s.tats {
		tat := b.tat
		if b.inFlight.Load() > 0 {
			continue // its requests still hold it
		}
		if tat <= t {
			victim, found = k, true
			break
		}
		if tat < best {
			victim, best, found = k, tat, true
		}
		if n++; n == 8 {
			break
		}
	}
	if found { // else every key sampled is held: the shard grows by one
		delete(s.tats, victim)
	}
}

// Stats are a limiter's counts since it was made.
type Stats struct {
	Allowed, Limited, Evicted int64
	Keys                      int
}

// Stats returns the counts and the keys kept now.
func (l *Limiter) Stats() Stats {
	st := Stats{Allowed: l.allowed.Load(), Limited: l.limited.Load(), Evicted: l.evicted.Load()}
	for i := range l.shard {
		s := &l.shard[i]
		s.mu.Lock()
		st.Keys += len(s.tats)
		s.mu.Unlock()
	}
	return st
}
