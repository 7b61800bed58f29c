package cluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

func intPtr(n int) *int     { return &n }
func boolP(b bool) *bool    { return &b }
func noApply(OverrideTable) {}

func TestOverridesAcrossNodes(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := startNode(t, testConfig(t, srv, "a", 1))
	b := startNode(t, testConfig(t, srv, "b", 1))
	oa := a.Overrides("", noApply)
	var mu sync.Mutex
	var seen OverrideTable
	ob := b.Overrides(filepath.Join(t.TempDir(), "cache"), func(t OverrideTable) { mu.Lock(); seen = t; mu.Unlock() })
	ctx := context.Background()
	got, err := oa.Update(ctx, "api", "10.0.0.1:80", func(o Override) (Override, error) { o.Weight = intPtr(7); return o, nil })
	if err != nil || got.By != "a" || *got.Weight != 7 {
		t.Fatalf("Update = %+v, %v", got, err)
	}
	if w := oa.Table()["api"]["10.0.0.1:80"].Weight; w == nil || *w != 7 {
		t.Fatal("the writer's own table does not show its write when Update returns")
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		v := seen["api"]["10.0.0.1:80"]
		return v.Weight != nil && *v.Weight == 7 && v.By == "a"
	}, "b applies a's override")
	// Concurrent writes of different fields on a and b both survive (CAS).
	var wg sync.WaitGroup
	for i, o := range []*Overrides{oa, ob} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				_, err := o.Update(ctx, "api", "10.0.0.1:80", func(v Override) (Override, error) {
					if i == 0 {
						v.Drain = boolP(j%2 == 1)
					} else {
						v.Disabled = boolP(j%2 == 1)
					}
					return v, nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	testutil.Eventually(t, 10*time.Second, func() bool {
		v := oa.Table()["api"]["10.0.0.1:80"]
		return v.Weight != nil && *v.Weight == 7 && v.Drain != nil && *v.Drain && v.Disabled != nil && *v.Disabled
	}, "every field of the concurrent writes kept: %+v", oa.Table())
	// Clearing every field deletes the key.
	if _, err := ob.Update(ctx, "api", "10.0.0.1:80", func(Override) (Override, error) { return Override{}, nil }); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return len(oa.Table()) == 0 }, "the cleared override is gone on a")
}

func TestOverridesOutage(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := startNode(t, testConfig(t, srv, "a", 1))
	cfgB := testConfig(t, srv, "b", 1)
	b := startNode(t, cfgB)
	cache := filepath.Join(t.TempDir(), "overrides.sealed")
	oa := a.Overrides("", noApply)
	ob := b.Overrides(cache, noApply)
	ctx := context.Background()
	if _, err := oa.Update(ctx, "api", "s:1", func(o Override) (Override, error) { o.Drain = boolP(true); return o, nil }); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return ob.Table()["api"]["s:1"].Drain != nil }, "b sees the drain")
	srv.Kill()
	start := time.Now()
	_, err := oa.Update(ctx, "api", "s:1", func(o Override) (Override, error) { o.Weight = intPtr(1); return o, nil })
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Update while etcd is down: %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Update took %s to fail", d)
	}
	if oa.Table()["api"]["s:1"].Weight != nil || ob.Table()["api"]["s:1"].Weight != nil {
		t.Fatal("a refused write changed a table")
	}
	// An instance restarted during the outage starts from its sealed cache.
	b.Close()
	b2 := startNode(t, cfgB)
	var first OverrideTable
	ob2 := b2.Overrides(cache, func(t OverrideTable) {
		if first == nil {
			first = t
		}
	})
	if v := first["api"]["s:1"]; v.Drain == nil || !*v.Drain {
		t.Fatalf("restarted instance began with %+v, want the cached drain", first)
	}
	srv.Restart()
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, err := oa.Update(ctx, "api", "s:2", func(o Override) (Override, error) { o.Weight = intPtr(3); return o, nil })
		return err == nil
	}, "writes work again after etcd returned")
	testutil.Eventually(t, 10*time.Second, func() bool { return ob2.Table()["api"]["s:2"].Weight != nil }, "the write after the outage reached the restarted b")
}

// TestOverrideUpdateOutlastsConflicts: a write that loses its
// compare-and-swap to other writers more than a few times in a row (two
// instances changing one server at once, on a loaded machine) still
// lands, on the latest value, while its deadline allows; it is not
// reported as etcd being unreachable.
func TestOverrideUpdateOutlastsConflicts(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	a := startNode(t, testConfig(t, srv, "a", 1))
	b := startNode(t, testConfig(t, srv, "b", 1))
	oa := a.Overrides("", noApply)
	ctx := context.Background()
	key := b.Key("overrides", "api", "10.0.0.1:80")
	const conflicts = 12
	calls := 0
	got, err := oa.Update(ctx, "api", "10.0.0.1:80", func(o Override) (Override, error) {
		calls++
		if calls <= conflicts {
			// Another writer gets in between this read and its write.
			if _, err := b.Client().Put(ctx, key, fmt.Sprintf(`{"weight":%d}`, calls)); err != nil {
				return o, err
			}
		}
		o.Drain = boolP(true)
		return o, nil
	})
	if err != nil {
		t.Fatalf("Update after %d conflicts: %v", conflicts, err)
	}
	if calls != conflicts+1 || got.Drain == nil || !*got.Drain || got.Weight == nil || *got.Weight != conflicts {
		t.Fatalf("Update = %+v after %d calls; want the drain on the last conflicting write's weight %d, on call %d", got, calls, conflicts, conflicts+1)
	}
}
