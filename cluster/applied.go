package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/edgeway/edgeway/internal/atomicfile"
)

// applied is the etcd revision a followed table has applied last, so a
// writer can wait until its own write came back through the watch.
type applied struct {
	mu      sync.Mutex
	rev     int64
	changed chan struct{} // closed and replaced on each advance
}

func newApplied() *applied { return &applied{changed: make(chan struct{})} }

// advance records that rev (or an earlier one) is applied.
func (a *applied) advance(rev int64) {
	a.mu.Lock()
	a.rev = max(a.rev, rev)
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// wait returns once rev is applied, or when ctx ends.
func (a *applied) wait(ctx context.Context, rev int64) {
	for {
		a.mu.Lock()
		done, ch := a.rev >= rev, a.changed
		a.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// sealedCache is a followed table's copy on disk, sealed with the
// cluster key, for an instance that starts while etcd is unreachable;
// what names it in messages ("override", "route share").
type sealedCache[T any] struct {
	n    *Node
	file string // "" for none
	what string
}

// write replaces the cached copy with t (failures are logged: the cache
// only helps a restart during an outage).
func (c sealedCache[T]) write(t T) {
	if c.file == "" {
		return
	}
	b, err := json.Marshal(t)
	if err == nil {
		b, err = c.n.Seal(b)
	}
	if err == nil {
		err = atomicfile.Write(c.file, b)
	}
	if err != nil {
		c.n.log.Warn("cluster: writing the "+c.what+" cache", "file", c.file, "err", err)
	}
}

// read returns the cached copy; os.ErrNotExist when there is none.
func (c sealedCache[T]) read() (T, error) {
	var t T
	if c.file == "" {
		return t, os.ErrNotExist
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return t, err
	}
	plain, err := c.n.Open(b)
	if err != nil {
		return t, err
	}
	if err := json.Unmarshal(plain, &t); err != nil {
		return t, fmt.Errorf("%s cache: %w", c.what, err)
	}
	return t, nil
}
