package cluster

import (
	"context"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// KV is one key under a followed prefix; Key is relative to it.
type KV struct {
	Key         string
	Value       []byte
	ModRevision int64
}

// Event is one change under a followed prefix: a put, or a delete (Value
// nil).
type Event struct {
	KV
	Deleted bool
}

// Handler receives the state of a followed prefix, always from one
// goroutine: Reset with everything under it (at start and after every
// resync), then Change for each event after that revision. A Handler
// that reconciles on Reset (clears what is gone) is correct whatever was
// missed in between.
type Handler interface {
	Reset(kvs []KV, rev int64)
	Change(ev Event)
}

// Follow feeds h the keys under Key(sub) until the node closes: a full
// read at revision R, then a watch from R+1. A watch that ends, reports
// an error or a compaction, starts over with a full read (counted in
// Metrics.Resyncs). While etcd is unreachable h keeps what it had and
// Follow retries in the background.
func (n *Node) Follow(sub string, h Handler) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.recover("follow " + sub)
		prefix := n.Key(sub) + "/"
		first := true
		for n.ctx.Err() == nil {
			rev, ok := n.readAll(prefix, h)
			if !ok {
				if !n.wait(retryDelay) {
					return
				}
				continue
			}
			if !first {
				n.Metrics.Resyncs.Add(1)
			}
			first = false
			n.watchFrom(prefix, rev+1, h)
			if !n.wait(retryDelay / 5) {
				return
			}
		}
	}()
}

func (n *Node) readAll(prefix string, h Handler) (int64, bool) {
	ctx, cancel := context.WithTimeout(n.ctx, 3*CallTimeout)
	defer cancel()
	resp, err := n.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return 0, false
	}
	kvs := make([]KV, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs = append(kvs, KV{Key: strings.TrimPrefix(string(kv.Key), prefix), Value: kv.Value, ModRevision: kv.ModRevision})
	}
	h.Reset(kvs, resp.Header.Revision)
	n.Metrics.LastSync.Store(time.Now().UnixNano())
	return resp.Header.Revision, true
}

// watchFrom applies events until the watch fails or the node closes.
func (n *Node) watchFrom(prefix string, rev int64, h Handler) {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(n.ctx))
	defer cancel()
	for resp := range n.cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev)) {
		if resp.Canceled || resp.Err() != nil || resp.CompactRevision != 0 {
			if n.ctx.Err() == nil {
				n.log.Info("cluster: watch ended; reading everything again", "prefix", prefix, "err", resp.Err())
			}
			return
		}
		for _, ev := range resp.Events {
			e := Event{KV: KV{Key: strings.TrimPrefix(string(ev.Kv.Key), prefix), ModRevision: ev.Kv.ModRevision}}
			if ev.Type == clientv3.EventTypeDelete {
				e.Deleted = true
			} else {
				e.Value = ev.Kv.Value
			}
			h.Change(e)
		}
		n.Metrics.LastSync.Store(time.Now().UnixNano())
	}
}

// recover keeps a panic in a background loop from taking the process
// down; the loop ends and the error is logged.
func (n *Node) recover(what string) {
	if r := recover(); r != nil {
		n.log.Error("cluster: background loop panicked", "loop", what, "panic", r)
	}
}
