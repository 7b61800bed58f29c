package bodybuf

import (
	"errors"
	"testing"
)

// TestDiskFreeFloor: a spill never takes its file system under
// MinFreePercent free, whatever the disk cap allows. The file system is
// one this test describes (statFS), since a real one cannot be filled on
// a shared machine; the files are real, in a temporary directory.
func TestDiskFreeFloor(t *testing.T) {
	dir := t.TempDir()
	const total = 1 << 30
	avail := int64(total*MinFreePercent/100 + 1<<20) // 1 MiB above the floor
	old := statFS
	statFS = func(d string) (int64, int64, bool) {
		if d != dir {
			t.Errorf("statfs of %q, want %q", d, dir)
		}
		return avail, total, true
	}
	t.Cleanup(func() { statFS = old })

	p := NewPool(Limits{Memory: 64 << 10, PerBody: 64 << 10, Dir: dir})
	var b Buffer
	b.Start(p)
	err := fill(&b, randomBody(4<<20), 8<<10)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("filling 4 MiB with 1 MiB above the floor: %v, want ErrFull", err)
	}
	if d := p.Stats().Disk; d == 0 || d > 1<<20 {
		t.Fatalf("disk held %d, want some and at most the 1 MiB above the floor", d)
	}
	b.Release(true)

	// Room again: the next reading (forced here by clearing the last
	// one's time) sees it.
	avail = total / 2
	p.free.at.Store(0)
	var c Buffer
	c.Start(p)
	if err := fill(&c, randomBody(4<<20), 8<<10); err != nil {
		t.Fatalf("filling 4 MiB with half the file system free: %v", err)
	}
	c.Release(true)
}
