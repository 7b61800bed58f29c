package cluster

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeway/edgeway/acme"
	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestACMEStore: the acme.Storage contract on etcd, values sealed in
// etcd itself, bad keys refused.
func TestACMEStore(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	n := startNode(t, testConfig(t, srv, "a", 1))
	s := NewACMEStore(n)
	ctx := context.Background()
	if _, err := s.Get(ctx, "ca/certs/a.key"); !errors.Is(err, acme.ErrNotExist) {
		t.Fatalf("Get of a missing key: %v, want acme.ErrNotExist", err)
	}
	secret := []byte("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n")
	for _, k := range []string{"ca/certs/a.key", "ca/certs/a.crt", "ca/account.key"} {
		if err := s.Put(ctx, k, secret); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := s.Get(ctx, "ca/certs/a.key"); err != nil || !bytes.Equal(b, secret) {
		t.Fatalf("Get = %q, %v", b, err)
	}
	keys, err := s.List(ctx, "ca/certs")
	if err != nil || !slices.Equal(keys, []string{"ca/certs/a.crt", "ca/certs/a.key"}) {
		t.Fatalf("List = %v, %v", keys, err)
	}
	// Every value in etcd, read raw: none holds a private key in clear.
	res, err := n.Client().Get(ctx, "", clientv3.WithPrefix())
	if err != nil || len(res.Kvs) < 3 {
		t.Fatalf("raw read: %d keys, %v", len(res.Kvs), err)
	}
	for _, kv := range res.Kvs {
		if bytes.Contains(kv.Value, []byte("PRIVATE KEY")) || bytes.Contains(kv.Value, []byte("secret")) {
			t.Errorf("%s holds a key in clear", kv.Key)
		}
	}
	if err := s.Delete(ctx, "ca/certs/a.key"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "ca/certs/a.key"); !errors.Is(err, acme.ErrNotExist) {
		t.Fatalf("Get after Delete: %v", err)
	}
	for _, k := range []string{"", "/x", "../x", "a/../../x", "a\\b", "a//b", "a/"} {
		if err := s.Put(ctx, k, nil); err == nil {
			t.Errorf("Put(%q) accepted", k)
		}
	}
}

// TestACMEStoreLock: two instances exclude each other; a lock whose lease
// is revoked (as a killed holder's expires) reports Lost, its fenced
// write is refused, and the waiter gets the lock.
func TestACMEStoreLock(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := NewACMEStore(startNode(t, testConfig(t, srv, "a", 1)))
	b := NewACMEStore(startNode(t, testConfig(t, srv, "b", 1)))
	ctx := context.Background()
	la, err := a.Lock(ctx, "ca/names/x.test")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PutLocked(ctx, la, "ca/certs/x.test.crt", []byte("a")); err != nil {
		t.Fatalf("PutLocked while held: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := b.Lock(short, "ca/names/x.test"); err == nil {
		t.Fatal("b took the lock a holds")
	}
	got := make(chan acme.Lock, 1)
	go func() {
		l, err := b.Lock(ctx, "ca/names/x.test")
		if err != nil {
			t.Errorf("b's Lock: %v", err)
		}
		got <- l
	}()
	sess, err := a.n.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.n.Client().Revoke(ctx, sess.Lease()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("Lost not closed after the holder's lease was revoked")
	}
	if err := a.PutLocked(ctx, la, "ca/certs/x.test.crt", []byte("stale")); !errors.Is(err, acme.ErrLockLost) {
		t.Fatalf("PutLocked after the loss: %v, want ErrLockLost", err)
	}
	var lb acme.Lock
	select {
	case lb = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter never got the freed lock")
	}
	if lb == nil {
		t.FailNow()
	}
	defer lb.Unlock()
	if err := b.PutLocked(ctx, lb, "ca/certs/x.test.crt", []byte("b")); err != nil {
		t.Fatal(err)
	}
	// b waited twice (500 ms, then until the revocation): the lock wait
	// metric counts both and their time.
	if n, ns := b.n.Metrics.LockWaits.Load(), b.n.Metrics.LockWaitNs.Load(); n != 2 || time.Duration(ns) < 500*time.Millisecond {
		t.Errorf("b's lock waits: %d, %s; want 2 and at least 500ms", n, time.Duration(ns))
	}
	// The stale write of a did not land over b's.
	if v, _ := b.Get(ctx, "ca/certs/x.test.crt"); string(v) != "b" {
		t.Fatalf("value %q, want b's", v)
	}
	la.Unlock() // after the loss: does nothing harmful
}

// TestACMEStoreWatchAndEphemeral: a watcher sees keys another instance
// puts; an ephemeral value goes by itself after its TTL.
func TestACMEStoreWatchAndEphemeral(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := NewACMEStore(startNode(t, testConfig(t, srv, "a", 1)))
	b := NewACMEStore(startNode(t, testConfig(t, srv, "b", 1)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.Put(ctx, "ca/certs/old.crt", []byte("x")); err != nil {
		t.Fatal(err)
	}
	keys, err := b.Watch(ctx, "ca/certs/")
	if err != nil {
		t.Fatal(err)
	}
	want := func(k string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case got := <-keys:
				if got == k {
					return
				}
			case <-deadline:
				t.Fatalf("the watch never sent %s", k)
			}
		}
	}
	want("ca/certs/old.crt") // the first read
	if err := a.Put(ctx, "ca/certs/new.crt", []byte("y")); err != nil {
		t.Fatal(err)
	}
	want("ca/certs/new.crt")

	if err := a.PutEphemeral(ctx, "ca/challenges/http-01/tok", []byte("ka"), time.Second); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get(ctx, "ca/challenges/http-01/tok"); err != nil || string(v) != "ka" {
		t.Fatalf("the other instance reads %q, %v", v, err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, err := b.Get(ctx, "ca/challenges/http-01/tok")
		return errors.Is(err, acme.ErrNotExist)
	}, "the ephemeral value outlived its TTL")
	cancel()
	testutil.Eventually(t, 10*time.Second, func() bool {
		select {
		case _, ok := <-keys:
			return !ok
		default:
			return false
		}
	}, "the watch channel is not closed after its context ended")
}

// TestACMEStoreRelockAtOnce: Lock right after Unlock of the same key on
// the same session holds a lock that is really held (the release of the
// previous one must not delete the new one's key): its fenced write goes
// through, every time.
func TestACMEStoreRelockAtOnce(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := NewACMEStore(startNode(t, testConfig(t, srv, "a", 1)))
	ctx := context.Background()
	for i := range 20 {
		l, err := a.Lock(ctx, "ca/names/r.test")
		if err != nil {
			t.Fatalf("lock %d: %v", i, err)
		}
		if err := a.PutLocked(ctx, l, "ca/certs/r.test.crt", []byte{byte(i)}); err != nil {
			t.Fatalf("fenced write under lock %d: %v", i, err)
		}
		l.Unlock()
	}
}
