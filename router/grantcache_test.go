package router

import (
	"testing"
	"time"
)

// TestGrantCache: a grant counts until its deadline, and the cache stays
// within its size however many keys come.
func TestGrantCache(t *testing.T) {
	t.Parallel()
	c := newGrantCache[string](4)
	now := time.Unix(1000, 0)
	c.put([32]byte{1}, "a", now.Add(time.Minute))
	if v, ok := c.get([32]byte{1}, now); !ok || v != "a" {
		t.Fatalf("get = %q, %v", v, ok)
	}
	if _, ok := c.get([32]byte{1}, now.Add(time.Minute)); ok {
		t.Fatal("a grant counted at its deadline")
	}
	for i := range 100 {
		c.put([32]byte{2, byte(i)}, "b", now.Add(time.Minute))
	}
	if n := len(c.entries); n > 4 {
		t.Fatalf("%d entries, want at most 4", n)
	}
}
