package cluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/edgeway/edgeway/internal/panics"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/edgeway/edgeway/acme"
)

// ACMEStore is acme.Storage on etcd, shared by every instance of the
// cluster: values under Key("acme", ...), every one sealed (account key,
// certificate keys, challenge keys and the rest alike, so nothing under
// acme/ is readable without key_file); locks are etcd mutexes on the
// node's lease session, lost when the session ends; writes under a lock
// are fenced (Txn If IsOwner); challenges are put on a lease of their
// own, so they expire by themselves; Watch feeds changes from a revision
// and re-reads everything after a gap.
type ACMEStore struct {
	n *Node
}

// Interface guards.
var (
	_ acme.Storage   = (*ACMEStore)(nil)
	_ acme.Watcher   = (*ACMEStore)(nil)
	_ acme.Ephemeral = (*ACMEStore)(nil)
)

// NewACMEStore returns the ACME storage of node n.
func NewACMEStore(n *Node) *ACMEStore { return &ACMEStore{n: n} }

// root is the etcd folder of the ACME keys, with its trailing slash.
func (s *ACMEStore) root() string { return s.n.Key("acme") + "/" }

// key maps an ACME storage key to its etcd key, refusing what Dir
// refuses (so that a key means the same in both).
func (s *ACMEStore) key(k string) (string, error) {
	if k == "" || strings.HasPrefix(k, "/") || strings.HasSuffix(k, "/") || slices.Contains(strings.Split(k, "/"), "..") ||
		slices.Contains(strings.Split(k, "/"), ".") || strings.ContainsAny(k, "\\\x00") || strings.Contains(k, "//") {
		return "", fmt.Errorf("cluster: acme storage: invalid key %q", k)
	}
	return s.root() + k, nil
}

func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

// Get implements acme.Storage.
func (s *ACMEStore) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.key(key)
	if err != nil {
		return nil, err
	}
	ctx, cancel := callCtx(ctx)
	defer cancel()
	res, err := s.n.cli.Get(ctx, k)
	if err != nil {
		return nil, s.n.unavailable("acme get "+key, err)
	}
	if len(res.Kvs) == 0 {
		return nil, fmt.Errorf("%w: %s", acme.ErrNotExist, key)
	}
	b, err := s.n.Open(res.Kvs[0].Value)
	if err != nil {
		return nil, fmt.Errorf("cluster: acme storage: opening %s: %w", key, err)
	}
	return b, nil
}

// Put implements acme.Storage.
func (s *ACMEStore) Put(ctx context.Context, key string, value []byte) error {
	return s.put(ctx, key, value)
}

func (s *ACMEStore) put(ctx context.Context, key string, value []byte, opts ...clientv3.OpOption) error {
	k, sealed, err := s.sealed(key, value)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(ctx)
	defer cancel()
	if _, err := s.n.cli.Put(ctx, k, string(sealed), opts...); err != nil {
		return s.n.unavailable("acme put "+key, err)
	}
	return nil
}

func (s *ACMEStore) sealed(key string, value []byte) (string, []byte, error) {
	k, err := s.key(key)
	if err != nil {
		return "", nil, err
	}
	sealed, err := s.n.Seal(value)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: acme storage: sealing %s: %w", key, err)
	}
	return k, sealed, nil
}

// PutEphemeral implements acme.Ephemeral: the value is on a lease of ttl
// (at least a second) of its own, so it outlives this instance (the CA
// may validate after the orderer died) but not the order.
func (s *ACMEStore) PutEphemeral(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	gctx, cancel := callCtx(ctx)
	g, err := s.n.cli.Grant(gctx, int64(max(time.Second, ttl)/time.Second))
	cancel()
	if err != nil {
		return s.n.unavailable("acme lease", err)
	}
	return s.put(ctx, key, value, clientv3.WithLease(g.ID))
}

// List implements acme.Storage.
func (s *ACMEStore) List(ctx context.Context, prefix string) ([]string, error) {
	p := s.root()
	if prefix != "" {
		k, err := s.key(prefix)
		if err != nil {
			return nil, err
		}
		p = k + "/"
	}
	ctx, cancel := callCtx(ctx)
	defer cancel()
	res, err := s.n.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, s.n.unavailable("acme list "+prefix, err)
	}
	keys := make([]string, 0, len(res.Kvs))
	for _, kv := range res.Kvs {
		keys = append(keys, strings.TrimPrefix(string(kv.Key), s.root()))
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete implements acme.Storage.
func (s *ACMEStore) Delete(ctx context.Context, key string) error {
	k, err := s.key(key)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(ctx)
	defer cancel()
	if _, err := s.n.cli.Delete(ctx, k); err != nil {
		return s.n.unavailable("acme delete "+key, err)
	}
	return nil
}

// etcdLock is a held etcd mutex. Lost closes when the session ends
// (lease expired or revoked) or at Unlock.
type etcdLock struct {
	m      *concurrency.Mutex
	sess   *concurrency.Session
	lost   chan struct{}
	unlock chan struct{}
	once   sync.Once
}

func (l *etcdLock) Lost() <-chan struct{} { return l.lost }

// Unlock releases the mutex and returns once it is released (or the
// session ended): a Lock of the same key on the same session right after
// must not meet this one's key (it would take it for its own, and this
// release would then delete it).
func (l *etcdLock) Unlock() {
	l.once.Do(func() { close(l.unlock) })
	<-l.lost
}

// Lock implements acme.Storage with a concurrency.Mutex under
// Key("locks", "acme", key) on the node's session: waiting watches the
// holder before it (no polling), and a killed holder's lock goes with its
// lease, within lease_ttl. The wait ends with ctx or with the session
// (etcd#19597: a waiter does not notice its own session expired).
func (s *ACMEStore) Lock(ctx context.Context, key string) (acme.Lock, error) {
	if _, err := s.key(key); err != nil {
		return nil, err
	}
	sess, err := s.n.Session(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: acme lock %s: %w", key, err)
	}
	m := concurrency.NewMutex(sess, s.n.Key("locks", "acme", key))
	wctx, cancel := context.WithCancel(ctx)
	go func() {
		defer panics.Recover("cluster: acme lock wait")
		select {
		case <-sess.Done():
			cancel()
		case <-wctx.Done():
		}
	}()
	began := time.Now()
	err = m.Lock(wctx)
	cancel()
	s.n.Metrics.LockWaits.Add(1)
	s.n.Metrics.LockWaitNs.Add(int64(time.Since(began)))
	if err != nil {
		return nil, fmt.Errorf("cluster: acme lock %s: %w", key, err)
	}
	l := &etcdLock{m: m, sess: sess, lost: make(chan struct{}), unlock: make(chan struct{})}
	panics.Go("cluster: acme lock", func() { l.hold(s.n) })
	return l, nil
}

// hold closes Lost when the session ends or at Unlock, releasing the
// mutex in the latter case.
func (l *etcdLock) hold(n *Node) {
	defer close(l.lost)
	select {
	case <-l.sess.Done():
	case <-l.unlock:
		ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		if err := l.m.Unlock(ctx); err != nil {
			n.log.Warn("cluster: acme unlock failed; the lock goes with the session", "err", err)
		}
	}
}

// PutLocked implements acme.Storage: the put is one transaction guarded
// by the mutex's ownership, so a holder whose lease ended (even one that
// has not noticed yet) writes nothing.
func (s *ACMEStore) PutLocked(ctx context.Context, lk acme.Lock, key string, value []byte) error {
	l, ok := lk.(*etcdLock)
	if !ok {
		return fmt.Errorf("cluster: acme put %s: the lock is not this store's", key)
	}
	select {
	case <-l.lost:
		return fmt.Errorf("cluster: acme put %s: %w", key, acme.ErrLockLost)
	default:
	}
	k, sealed, err := s.sealed(key, value)
	if err != nil {
		return err
	}
	ctx, cancel := callCtx(ctx)
	defer cancel()
	res, err := s.n.cli.Txn(ctx).If(l.m.IsOwner()).Then(clientv3.OpPut(k, string(sealed))).Commit()
	if err != nil {
		return s.n.unavailable("acme put "+key, err)
	}
	if !res.Succeeded {
		return fmt.Errorf("cluster: acme put %s: %w", key, acme.ErrLockLost)
	}
	return nil
}

// Watch implements acme.Watcher: every key under prefix at first (and
// after each gap: a watch error or a compaction), then each key changed.
// The channel closes when ctx ends.
func (s *ACMEStore) Watch(ctx context.Context, prefix string) (<-chan string, error) {
	p := s.root()
	if prefix = strings.TrimSuffix(prefix, "/"); prefix != "" {
		k, err := s.key(prefix)
		if err != nil {
			return nil, err
		}
		p = k + "/"
	}
	out := make(chan string, 64)
	go func() {
		defer panics.Recover("cluster: acme watch")
		defer close(out)
		for ctx.Err() == nil {
			if !s.watchOnce(ctx, p, out) {
				t := time.NewTimer(retryDelay)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
		}
	}()
	return out, nil
}

// watchOnce reads every key under p, sends them, then sends the keys of
// each event until the watch breaks; false when the read failed.
func (s *ACMEStore) watchOnce(ctx context.Context, p string, out chan<- string) bool {
	gctx, cancel := callCtx(ctx)
	res, err := s.n.cli.Get(gctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	cancel()
	if err != nil {
		return false
	}
	send := func(k []byte) bool {
		select {
		case out <- strings.TrimPrefix(string(k), s.root()):
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, kv := range res.Kvs {
		if !send(kv.Key) {
			return true
		}
	}
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	for wr := range s.n.cli.Watch(wctx, p, clientv3.WithPrefix(), clientv3.WithRev(res.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			if !errors.Is(err, context.Canceled) {
				s.n.log.Warn("cluster: acme watch ended; reading everything again", "err", err)
			}
			return true
		}
		for _, ev := range wr.Events {
			if !send(ev.Kv.Key) {
				return true
			}
		}
	}
	return true
}
