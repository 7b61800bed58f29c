package router

import (
	"sync"
	"time"
)

// grantCache remembers what an authentication policy granted for a
// digest of the credentials (never the credentials), until a deadline,
// so that a client's repeated credentials cost one check. It holds at
// most max entries; a full cache drops one at random (map order) to make
// room. Safe for concurrent use.
type grantCache[V any] struct {
	mu      sync.Mutex
	max     int
	entries map[[32]byte]grant[V]
}

type grant[V any] struct {
	until time.Time
	v     V
}

func newGrantCache[V any](max int) *grantCache[V] {
	return &grantCache[V]{max: max, entries: map[[32]byte]grant[V]{}}
}

// get returns what was granted for key, if it still counts at now.
func (c *grantCache[V]) get(key [32]byte, now time.Time) (V, bool) {
	c.mu.Lock()
	g, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || !now.Before(g.until) {
		var zero V
		return zero, false
	}
	return g.v, true
}

// put remembers v for key until until.
func (c *grantCache[V]) put(key [32]byte, v V, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = grant[V]{until: until, v: v}
}
