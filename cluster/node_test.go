package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// testConfig is a cluster block for srv with a key file of key bytes b.
func testConfig(t *testing.T, srv *etcdtest.Server, name string, b byte) conf.Cluster {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cluster.key")
	if err := os.WriteFile(p, testKey(b), 0o600); err != nil {
		t.Fatal(err)
	}
	return conf.Cluster{Etcd: srv.Endpoints(), Prefix: "/edgeway/test", Name: name, KeyFile: p, LeaseTTL: 5 * time.Second}
}

func startNode(t *testing.T, cfg conf.Cluster) *Node {
	t.Helper()
	n, err := Start(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("cluster.Start: %v", err)
	}
	t.Cleanup(n.Close)
	return n
}

func TestNodeMembersAndKey(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := startNode(t, testConfig(t, srv, "a", 1))
	if got := a.Key("overrides", "api", "10.0.0.1:80"); got != "/edgeway/test/v1/overrides/api/10.0.0.1:80" {
		t.Fatalf("Key = %q", got)
	}
	b := startNode(t, testConfig(t, srv, "b", 1))
	b.SetMember("v9", "abc")
	testutil.Eventually(t, 10*time.Second, func() bool { return a.LiveMembers() == 2 && b.LiveMembers() == 2 },
		"both nodes see 2 members (a %d, b %d)", a.LiveMembers(), b.LiveMembers())
	testutil.Eventually(t, 10*time.Second, func() bool {
		for _, m := range a.Members() {
			if m.Name == "b" && m.Version == "v9" && m.ConfigHash == "abc" {
				return true
			}
		}
		return false
	}, "a sees b's version and config hash: %+v", a.Members())
	if !a.Connected() || !b.Connected() {
		t.Fatalf("connected a=%v b=%v, want both", a.Connected(), b.Connected())
	}
	b.Close()
	testutil.Eventually(t, 10*time.Second, func() bool { return a.LiveMembers() == 1 }, "a sees b leave (closed, lease revoked)")
}

func TestNodeWrongKeyRefusesStart(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	startNode(t, testConfig(t, srv, "a", 1))
	_, err := Start(context.Background(), testConfig(t, srv, "b", 2), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), "cluster key does not match") {
		t.Fatalf("Start with another key: %v, want the keycheck error", err)
	}
}

func TestNodeSessionAfterLeaseLoss(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	n := startNode(t, testConfig(t, srv, "a", 1))
	ctx := context.Background()
	s1, err := n.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Client().Revoke(ctx, s1.Lease()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		s2, err := n.Session(ctx)
		return err == nil && s2.Lease() != s1.Lease()
	}, "a new session after the lease was revoked")
	testutil.Eventually(t, 10*time.Second, func() bool {
		r, err := n.Client().Get(ctx, n.Key("members", "a"))
		return err == nil && len(r.Kvs) == 1 && r.Kvs[0].Lease != int64(s1.Lease()) && n.Connected()
	}, "the member record is back on the new lease")
}

func TestNodeOutage(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	cfg := testConfig(t, srv, "a", 1)
	n := startNode(t, cfg)
	testutil.Eventually(t, 10*time.Second, n.Connected, "connected")
	srv.Kill()
	testutil.Eventually(t, 30*time.Second, func() bool { return !n.Connected() }, "disconnected once the lease ran out")
	// A second instance starts during the outage: Start does not fail.
	m := startNode(t, testConfig(t, srv, "b", 1))
	if m.Connected() {
		t.Fatal("a node started during the outage says it is connected")
	}
	srv.Restart()
	testutil.Eventually(t, 30*time.Second, func() bool { return n.Connected() && m.Connected() }, "both reconnected after etcd returned")
	testutil.Eventually(t, 10*time.Second, func() bool { return n.LiveMembers() == 2 }, "members seen again after the outage")
	// A write after the return is seen by a follower within 2 s.
	seen := make(chan string, 16)
	m.Follow("probe", handlerFunc(func(ev Event) { seen <- ev.Key }))
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err := n.Client().Put(context.Background(), n.Key("probe", "x"), "1")
		if err != nil {
			return false
		}
		select {
		case k := <-seen:
			return k == "x"
		case <-time.After(2 * time.Second):
			return false
		}
	}, "a write seen by the follower")
}

// handlerFunc is a Handler that reports changes only.
type handlerFunc func(Event)

func (h handlerFunc) Reset([]KV, int64) {}
func (h handlerFunc) Change(ev Event)   { h(ev) }

func TestWatchEndsOnCompaction(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	n := startNode(t, testConfig(t, srv, "a", 1))
	ctx := context.Background()
	var rev int64
	for i := range 3 {
		r, err := n.Client().Put(ctx, n.Key("things", "k"), strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		rev = r.Header.Revision
	}
	if _, err := n.Client().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	// A watch from before the compaction cannot be served: watchFrom
	// returns, and Follow's loop then reads everything again.
	done := make(chan struct{})
	go func() { n.watchFrom(n.Key("things")+"/", rev-2, handlerFunc(func(Event) {})); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a watch from a compacted revision did not end")
	}
	got := make(chan map[string]string, 4)
	n.Follow("things", resetFunc(func(kvs []KV) {
		m := map[string]string{}
		for _, kv := range kvs {
			m[kv.Key] = string(kv.Value)
		}
		got <- m
	}))
	select {
	case m := <-got:
		if m["k"] != "2" {
			t.Fatalf("full read = %v, want k=2", m)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no full read")
	}
}

type resetFunc func([]KV)

func (f resetFunc) Reset(kvs []KV, _ int64) { f(kvs) }
func (f resetFunc) Change(Event)            {}
