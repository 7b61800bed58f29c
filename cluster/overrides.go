package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Override is one server's runtime override as the cluster keeps it under
// overrides/<pool>/<address> (plaintext JSON: weights and drains are not
// secrets). A nil field is not set. By and At say which instance wrote
// it last and when.
type Override struct {
	Weight   *int      `json:"weight,omitempty"`
	Drain    *bool     `json:"drain,omitempty"`
	Disabled *bool     `json:"disabled,omitempty"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
}

// IsZero reports whether no field is set.
func (o Override) IsZero() bool { return o.Weight == nil && o.Drain == nil && o.Disabled == nil }

// OverrideTable is every override in the cluster, by pool then address.
// A published table is never changed.
type OverrideTable map[string]map[string]Override

// Overrides is the cluster's override table as this instance last saw
// it: written through etcd with compare-and-swap, applied by every
// instance (the writer too) from its watch.
type Overrides struct {
	n       *Node
	apply   func(OverrideTable)
	cache   sealedCache[OverrideTable]
	table   atomic.Pointer[OverrideTable]
	applied *applied
}

// Overrides starts following the override table. apply is called with
// the whole table, from one goroutine, each time it changes (and first
// with the cached table, when cacheFile holds one: an instance that
// starts while etcd is unreachable begins from its last state). cacheFile
// ("" for none) is rewritten, sealed, after each change.
func (n *Node) Overrides(cacheFile string, apply func(OverrideTable)) *Overrides {
	o := &Overrides{n: n, apply: apply, cache: sealedCache[OverrideTable]{n, cacheFile, "override"}, applied: newApplied()}
	empty := OverrideTable{}
	o.table.Store(&empty)
	if t, err := o.cache.read(); err == nil {
		o.table.Store(&t)
		apply(t)
	} else if !errors.Is(err, os.ErrNotExist) {
		n.log.Warn("cluster: override cache unreadable; waiting for etcd", "file", cacheFile, "err", err)
	}
	n.Follow("overrides", o)
	return o
}

// Table is the override table as last applied.
func (o *Overrides) Table() OverrideTable { return *o.table.Load() }

// Reset is the Handler side: the whole table at rev.
func (o *Overrides) Reset(kvs []KV, rev int64) {
	t := OverrideTable{}
	for _, kv := range kvs {
		pool, addr, ok := strings.Cut(kv.Key, "/")
		var v Override
		if !ok || json.Unmarshal(kv.Value, &v) != nil {
			o.n.log.Warn("cluster: ignoring a malformed override", "key", kv.Key)
			continue
		}
		if t[pool] == nil {
			t[pool] = map[string]Override{}
		}
		t[pool][addr] = v
	}
	o.publish(t, rev)
}

// Change is the Handler side: one override set or cleared.
func (o *Overrides) Change(ev Event) {
	pool, addr, ok := strings.Cut(ev.Key, "/")
	if !ok {
		return
	}
	old := o.Table()
	t := make(OverrideTable, len(old)+1)
	for p, m := range old {
		t[p] = m
	}
	m := make(map[string]Override, len(old[pool])+1)
	for a, v := range old[pool] {
		m[a] = v
	}
	var v Override
	switch {
	case ev.Deleted:
		delete(m, addr)
	case json.Unmarshal(ev.Value, &v) != nil:
		o.n.log.Warn("cluster: ignoring a malformed override", "key", ev.Key)
		return
	default:
		m[addr] = v
	}
	t[pool] = m
	if len(m) == 0 {
		delete(t, pool)
	}
	o.publish(t, ev.ModRevision)
}

func (o *Overrides) publish(t OverrideTable, rev int64) {
	o.table.Store(&t)
	o.apply(t)
	o.cache.write(t)
	o.applied.advance(rev)
}

// updateTimeout bounds an Update with its retries; each call to etcd in
// it has CallTimeout.
const updateTimeout = 5 * CallTimeout

// Update changes the override of pool/addr in etcd: change gets the
// current value (zero when none) and returns the new one; a zero result
// deletes the key. The write is a compare-and-swap on the key's
// revision; one that loses to another writer gets the key's new value in
// the same round trip and is tried again on it, after a short random
// pause (so that instances writing the key at once do not meet again in
// step), until updateTimeout. Update then waits (bounded) until this
// instance's watch has applied it, so the caller sees its own write. An
// error wraps ErrUnavailable when etcd could not be reached (a call
// outlasted CallTimeout), or when other writers kept winning the key
// until the deadline: then nothing changed here.
func (o *Overrides) Update(ctx context.Context, pool, addr string, change func(Override) (Override, error)) (Override, error) {
	ctx, cancel := context.WithTimeout(ctx, updateTimeout)
	defer cancel()
	key := o.n.Key("overrides", pool, addr)
	cur, seen, err := o.get(ctx, key)
	if err != nil {
		o.n.Metrics.FailedWrites.Add(1)
		return Override{}, err
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 && !conflictPause(ctx, attempt) {
			return Override{}, fmt.Errorf("cluster override %s/%s: %w: %d conflicting writes until the deadline", pool, addr, ErrUnavailable, attempt)
		}
		next, err := change(cur)
		if err != nil {
			return Override{}, err
		}
		next.By, next.At = o.n.Name(), time.Now().UTC().Truncate(time.Millisecond)
		op := clientv3.OpDelete(key)
		if !next.IsZero() {
			b, _ := json.Marshal(next)
			op = clientv3.OpPut(key, string(b))
		}
		cctx, ccancel := callCtx(ctx)
		resp, err := o.n.cli.Txn(cctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", seen)).
			Then(op).Else(clientv3.OpGet(key)).Commit()
		ccancel()
		if err != nil {
			o.n.Metrics.FailedWrites.Add(1)
			return Override{}, o.n.unavailable("override write", err)
		}
		if resp.Succeeded {
			o.applied.wait(ctx, resp.Header.Revision)
			return next, nil
		}
		cur, seen = Override{}, 0
		if rr := resp.Responses[0].GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			cur, seen = decodeOverride(rr.Kvs[0].Value), rr.Kvs[0].ModRevision
		}
	}
}

// conflictPause waits before the attempt-th try of a compare-and-swap
// that lost to another writer: a random time up to 1 ms doubled per
// attempt, at most 64 ms. It reports false when ctx ends first.
func conflictPause(ctx context.Context, attempt int) bool {
	ceiling := time.Millisecond << min(attempt-1, 6)
	t := time.NewTimer(mrand.N(ceiling) + time.Millisecond/10)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (o *Overrides) get(ctx context.Context, key string) (Override, int64, error) {
	ctx, cancel := callCtx(ctx)
	defer cancel()
	resp, err := o.n.cli.Get(ctx, key)
	if err != nil {
		return Override{}, 0, o.n.unavailable("override read", err)
	}
	if len(resp.Kvs) == 0 {
		return Override{}, 0, nil
	}
	return decodeOverride(resp.Kvs[0].Value), resp.Kvs[0].ModRevision, nil
}

// decodeOverride reads a stored override; a damaged value reads as none
// (and is replaced by the write).
func decodeOverride(b []byte) Override {
	var cur Override
	if err := json.Unmarshal(b, &cur); err != nil {
		return Override{}
	}
	return cur
}
