package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// ticketSink records the keys a node hands to its TLS store.
type ticketSink struct {
	mu   sync.Mutex
	keys [][32]byte
	sets int
}

func (s *ticketSink) set(k [][32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.sets = k, s.sets+1
}

func (s *ticketSink) get() [][32]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys
}

func sameKeys(a, b [][32]byte) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTicketKeysShared: three nodes end up with the same keys (the first
// record made by one of them); racing rotations from the same record
// rotate exactly once (one ModRevision bump); after it every node seals
// with the old next key and still opens the old current; the value in
// etcd is sealed (no key bytes in it).
func TestTicketKeysShared(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	var nodes []*Node
	var tks []*TicketKeys
	var sinks []*ticketSink
	for _, name := range []string{"a", "b", "c"} {
		n := startNode(t, testConfig(t, srv, name, 1))
		s := &ticketSink{}
		nodes, sinks = append(nodes, n), append(sinks, s)
		tks = append(tks, n.TicketKeys(time.Hour, "", s.set))
	}
	allSame := func() bool {
		k := sinks[0].get()
		return len(k) >= 2 && sameKeys(k, sinks[1].get()) && sameKeys(k, sinks[2].get()) &&
			tks[0].rev.Load() == tks[1].rev.Load() && tks[1].rev.Load() == tks[2].rev.Load()
	}
	testutil.Eventually(t, 20*time.Second, allSame, "the three nodes hold the same ticket keys")
	before := sinks[0].get()
	rev := tks[0].rev.Load()
	cur := tks[0].rec.Load()

	var won atomic.Int32
	var wg sync.WaitGroup
	for _, tk := range tks {
		wg.Go(func() {
			ok, err := tk.rotateFrom(context.Background(), rev, cur)
			if err != nil {
				t.Errorf("rotate: %v", err)
			}
			if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d of 3 racing rotations went through, want exactly 1", won.Load())
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return allSame() && tks[0].rev.Load() != rev },
		"the three nodes hold the rotated keys")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := nodes[0].Client().Get(ctx, nodes[0].Key("tls", ticketKeysKey))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get the record: %v %v", err, resp)
	}
	if kv := resp.Kvs[0]; kv.Version != 2 {
		t.Errorf("the record was written %d times (one creation, one rotation expected)", kv.Version)
	}
	after := sinks[0].get()
	// before = [current, next, ...]; after = [old next, fresh, old current, ...]
	if after[0] != before[1] || after[2] != before[0] {
		t.Errorf("after a rotation the sealing key is not the old next, or the old current no longer opens")
	}
	for _, k := range after {
		if bytes.Contains(resp.Kvs[0].Value, k[:]) {
			t.Errorf("a ticket key is in clear in etcd")
		}
	}
}

// TestTicketKeysRotateOncePerPeriod: three nodes with a short period
// rotate by the clock; consecutive records are at least a period apart
// (never two rotations for one period), and rotation goes on.
func TestTicketKeysRotateOncePerPeriod(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	const period = 2 * time.Second
	var first *Node
	for _, name := range []string{"a", "b", "c"} {
		n := startNode(t, testConfig(t, srv, name, 1))
		n.TicketKeys(period, "", func([][32]byte) {})
		if first == nil {
			first = n
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tk := &TicketKeys{n: first}
	w := first.Client().Watch(ctx, first.Key("tls", ticketKeysKey), clientv3.WithRev(1))
	var times []time.Time
	for resp := range w {
		for _, ev := range resp.Events {
			r, err := tk.open(ev.Kv.Value)
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, r.RotatedAt)
		}
		if len(times) >= 4 {
			break
		}
	}
	if len(times) < 4 {
		t.Fatalf("%d records in 60s with a period of %s, want 4", len(times), period)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < period {
			t.Errorf("rotations %d and %d are %s apart, less than the period %s", i-1, i, gap, period)
		}
	}
}

// TestTicketKeysRotateLocallyDuringLongOutage: with etcd gone for more
// than two periods a node rotates its keys itself (its sealing key is no
// longer one of the cluster record's); once etcd is back it takes the
// cluster's keys again.
func TestTicketKeysRotateLocallyDuringLongOutage(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	const period = time.Second
	n := startNode(t, testConfig(t, srv, "a", 1))
	s := &ticketSink{}
	tk := n.TicketKeys(period, "", s.set)
	testutil.Eventually(t, 20*time.Second, func() bool { return tk.rev.Load() != 0 && len(s.get()) >= 2 }, "the first record")
	srv.Kill()
	inRecord := func(k [32]byte) bool {
		for _, rk := range tk.rec.Load().Keys {
			if rk == k {
				return true
			}
		}
		return false
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return !inRecord(s.get()[0]) },
		"a local rotation after two periods without etcd")
	srv.Restart()
	testutil.Eventually(t, 30*time.Second, func() bool {
		k := s.get()
		return inRecord(k[0]) && sameKeys(k, tk.rec.Load().sealing())
	}, "the cluster's keys again once etcd is back")
}

// TestTicketKeysCacheAcrossRestartDuringOutage: a node restarted while
// etcd is down starts with the cluster's keys from its sealed cache.
func TestTicketKeysCacheAcrossRestartDuringOutage(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv, "a", 1)
	cache := filepath.Join(t.TempDir(), "ticket-keys.sealed")
	n := startNode(t, cfg)
	s := &ticketSink{}
	tk := n.TicketKeys(time.Hour, cache, s.set)
	testutil.Eventually(t, 20*time.Second, func() bool { return tk.rev.Load() != 0 && len(s.get()) >= 2 }, "the first record")
	want := s.get()
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := os.Stat(cache); return err == nil }, "the cache is written")
	b, err := os.ReadFile(cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range want {
		if bytes.Contains(b, k[:]) {
			t.Fatal("the cache holds a ticket key in clear")
		}
	}
	srv.Kill()
	n.Close()
	again := startNode(t, cfg)
	s2 := &ticketSink{}
	again.TicketKeys(time.Hour, cache, s2.set)
	if got := s2.get(); !sameKeys(got, want) {
		t.Fatalf("restarted during the outage with keys %d, want the cluster's %d from the cache", len(got), len(want))
	}
}
