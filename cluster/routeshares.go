package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// RouteShare is a traffic split's shares set through the admin API, as
// the cluster keeps it under route-shares/<route> (plaintext JSON):
// basis points by pool. By and At say which instance wrote it and when.
type RouteShare struct {
	Shares map[string]int `json:"shares"`
	By     string         `json:"by"`
	At     time.Time      `json:"at"`
}

// RouteShareTable is every route's shares in the cluster, by route name.
// A published table is never changed.
type RouteShareTable map[string]RouteShare

// RouteShares is the cluster's route share table as this instance last
// saw it: written through etcd, applied by every instance (the writer
// too) from its watch, as Overrides are.
type RouteShares struct {
	n       *Node
	apply   func(RouteShareTable)
	cache   sealedCache[RouteShareTable]
	table   atomic.Pointer[RouteShareTable]
	applied *applied
}

// RouteShares starts following the route share table. apply is called
// with the whole table, from one goroutine, each time it changes (first
// with the cached table, when cacheFile holds one); cacheFile ("" for
// none) is rewritten, sealed, after each change.
func (n *Node) RouteShares(cacheFile string, apply func(RouteShareTable)) *RouteShares {
	r := &RouteShares{n: n, apply: apply, cache: sealedCache[RouteShareTable]{n, cacheFile, "route share"}, applied: newApplied()}
	empty := RouteShareTable{}
	r.table.Store(&empty)
	if t, err := r.cache.read(); err == nil {
		r.table.Store(&t)
		apply(t)
	} else if !errors.Is(err, os.ErrNotExist) {
		n.log.Warn("cluster: route share cache unreadable; waiting for etcd", "file", cacheFile, "err", err)
	}
	n.Follow("route-shares", r)
	return r
}

// Table is the route share table as last applied.
func (r *RouteShares) Table() RouteShareTable { return *r.table.Load() }

// Reset is the Handler side: the whole table at rev.
func (r *RouteShares) Reset(kvs []KV, rev int64) {
	t := RouteShareTable{}
	for _, kv := range kvs {
		var v RouteShare
		if json.Unmarshal(kv.Value, &v) != nil || v.Shares == nil {
			r.n.log.Warn("cluster: ignoring malformed route shares", "key", kv.Key)
			continue
		}
		t[kv.Key] = v
	}
	r.publish(t, rev)
}

// Change is the Handler side: one route's shares set or cleared.
func (r *RouteShares) Change(ev Event) {
	t := maps.Clone(r.Table())
	var v RouteShare
	switch {
	case ev.Deleted:
		delete(t, ev.Key)
	case json.Unmarshal(ev.Value, &v) != nil || v.Shares == nil:
		r.n.log.Warn("cluster: ignoring malformed route shares", "key", ev.Key)
		return
	default:
		t[ev.Key] = v
	}
	r.publish(t, ev.ModRevision)
}

func (r *RouteShares) publish(t RouteShareTable, rev int64) {
	r.table.Store(&t)
	r.apply(t)
	r.cache.write(t)
	r.applied.advance(rev)
}

// Set writes route's shares to etcd (nil deletes them: back to the
// files' shares everywhere), then waits (bounded) until this instance's
// watch has applied the write. A PATCH replaces the whole set, so the
// last write wins, in etcd's order, on every instance alike. An error
// wraps ErrUnavailable when etcd could not be reached: then nothing
// changed anywhere.
func (r *RouteShares) Set(ctx context.Context, route string, shares map[string]int) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	key := r.n.Key("route-shares", route)
	op := clientv3.OpDelete(key)
	if shares != nil {
		b, _ := json.Marshal(RouteShare{Shares: shares, By: r.n.Name(), At: time.Now().UTC().Truncate(time.Millisecond)})
		op = clientv3.OpPut(key, string(b))
	}
	resp, err := r.n.cli.Do(ctx, op)
	if err != nil {
		r.n.Metrics.FailedWrites.Add(1)
		return r.n.unavailable("route shares write", err)
	}
	rev := int64(0)
	switch {
	case resp.Put() != nil:
		rev = resp.Put().Header.Revision
	case resp.Del() != nil:
		rev = resp.Del().Header.Revision
	}
	r.applied.wait(ctx, rev)
	return nil
}
