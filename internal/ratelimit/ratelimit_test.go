package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestBurstThenRate: a key gets its burst at once, then one request per
// interval; other keys are not touched.
func TestBurstThenRate(t *testing.T) {
	t.Parallel()
	l := New(10, time.Second, 5, 1000) // one per 100ms, bursts of 5
	t0 := int64(time.Hour)
	for i := range 5 {
		d := l.allowAt("a", t0)
		if !d.Allowed || d.Remaining != 4-i {
			t.Fatalf("request %d of the burst: %+v", i, d)
		}
	}
	d := l.allowAt("a", t0)
	if d.Allowed || d.RetryAfter != 100*time.Millisecond {
		t.Fatalf("past the burst: %+v, want refused, retry after 100ms", d)
	}
	if !l.allowAt("b", t0).Allowed {
		t.Fatal("another key was refused")
	}
	if !l.allowAt("a", t0+int64(100*time.Millisecond)).Allowed || l.allowAt("a", t0+int64(100*time.Millisecond)).Allowed {
		t.Fatal("after one interval exactly one more request is due")
	}
	if d := l.allowAt("a", t0+int64(10*time.Second)); !d.Allowed || d.Remaining != 4 {
		t.Fatalf("a rested key: %+v, want its whole burst back", d)
	}
}

// TestExactUnderConcurrency: many goroutines at one instant get exactly
// the burst between them.
func TestExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	l := New(1, time.Hour, 100, 1000)
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if l.allowAt("k", int64(time.Hour)).Allowed {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := ok.Load(); n != 100 {
		t.Fatalf("%d admitted of 800, want the burst, 100", n)
	}
	if st := l.Stats(); st.Allowed != 100 || st.Limited != 700 || st.Keys != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestKeysBounded: a flood of new keys keeps at most maxKeys buckets and
// counts what it evicts; a stored key does not view the caller's buffer.
func TestKeysBounded(t *testing.T) {
	t.Parallel()
	l := New(1, time.Second, 1, shards*10)
	buf := []byte("key-00000000")
	for i := range 100000 {
		copy(buf[4:], fmt.Sprintf("%08d", i))
		l.allowAt(string(buf), int64(time.Hour))
	}
	st := l.Stats()
	if st.Keys > shards*10 || st.Evicted < 100000-shards*10 {
		t.Fatalf("stats %+v, want at most %d keys and the rest evicted", st, shards*10)
	}
	// Keys view a buffer the caller reuses, as the router's do: neither
	// storing a new key nor updating a known one may keep the view.
	b := []byte("shared")
	view := unsafe.String(&b[0], len(b))
	l2 := New(1, time.Hour, 3, 100)
	l2.Allow(view)
	l2.Allow(view)
	copy(b, "SHARED")
	if !l2.Allow("shared").Allowed || l2.Allow("shared").Allowed {
		t.Fatal("the stored key changed with the caller's buffer")
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(1000000, time.Second, 1000, 100000)
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprintf("203.0.113.%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Allow(keys[i&1023])
		i++
	}
}

// TestInFlightCap: a key holds at most its cap of requests at once; a
// released slot admits the next.
func TestInFlightCap(t *testing.T) {
	l := NewWithCap(0, time.Second, 1, 1000, 2)
	_, s1 := l.Acquire("k")
	d2, s2 := l.Acquire("k")
	d3, _ := l.Acquire("k")
	if !d2.Allowed || d3.Allowed || d3.RetryAfter != time.Second {
		t.Fatalf("second %+v third %+v, want the cap at 2", d2, d3)
	}
	if d, s := l.Acquire("other"); !d.Allowed {
		t.Fatal("another key was refused")
	} else {
		s.Release()
	}
	s1.Release()
	d4, s4 := l.Acquire("k")
	if !d4.Allowed {
		t.Fatal("a released slot did not admit the next")
	}
	s2.Release()
	s4.Release()
	if n := testing.AllocsPerRun(100, func() { _, s := l.Acquire("k"); s.Release() }); n != 0 {
		t.Errorf("%v allocations per acquire, want 0", n)
	}
}

// TestMembersShare: with n members each instance admits rate/n and
// burst/n (at least 1); a change of the count applies to the next
// request.
func TestMembersShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc         string
		members      int
		burst        int           // admitted at once
		retry        time.Duration // then the wait for the next one
		perSecondNow int           // admitted over the next second, after the burst
	}{
		{"alone", 1, 10, 100 * time.Millisecond, 10},
		{"no count yet (0)", 0, 10, 100 * time.Millisecond, 10},
		{"two", 2, 5, 200 * time.Millisecond, 5},
		{"three: burst rounds down", 3, 3, 300 * time.Millisecond, 3},
		{"more members than burst: at least 1", 20, 1, 2 * time.Second, 0},
	} {
		var n atomic.Int64
		n.Store(int64(c.members))
		l := New(10, time.Second, 10, 1000)
		l.SetMembers(func() int { return int(n.Load()) })
		t0 := int64(time.Hour)
		got := 0
		for l.allowAt("k", t0).Allowed {
			got++
		}
		d := l.allowAt("k", t0)
		if got != c.burst || d.RetryAfter != c.retry {
			t.Errorf("%s: burst %d, retry after %v; want %d, %v", c.desc, got, d.RetryAfter, c.burst, c.retry)
		}
		more := 0
		for ms := int64(1); ms <= 1000; ms++ {
			if l.allowAt("k", t0+ms*int64(time.Millisecond)).Allowed {
				more++
			}
		}
		if more != c.perSecondNow {
			t.Errorf("%s: %d admitted in the next second, want %d", c.desc, more, c.perSecondNow)
		}
	}

	// A member leaves: the survivor's share grows at the next request.
	var n atomic.Int64
	n.Store(2)
	l := New(10, time.Second, 10, 1000)
	l.SetMembers(func() int { return int(n.Load()) })
	t0 := int64(time.Hour)
	if d := l.allowAt("k", t0); d.Remaining != 4 {
		t.Fatalf("two members: %+v, want 4 remaining of a burst of 5", d)
	}
	n.Store(1)
	// The first request took 200ms of the bucket (two of the whole
	// limit's), this one 100ms: 7 of 10 left.
	if d := l.allowAt("k", t0); d.Remaining != 7 {
		t.Fatalf("one member: %+v, want 7 remaining of a burst of 10", d)
	}
	l.SetMembers(nil)
	if d := l.allowAt("k", t0); d.Remaining != 6 {
		t.Fatalf("no provider: %+v, want the whole limit", d)
	}
}
