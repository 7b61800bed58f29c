package bodybuf

import (
	"sync"
	"sync/atomic"
	"time"
)

// freeSpace keeps a recent reading of the buffers' file system, so that a
// spill checks the free space with no system call: statfs runs at most
// once per freeEvery, or once freeSlack bytes were reserved since the
// last reading (a burst of spills cannot outrun it by more than that).
type freeSpace struct {
	mu       sync.Mutex // one reading at a time
	dir      atomic.Pointer[string]
	at       atomic.Int64 // monotonic nanoseconds of the reading; 0: none
	spare    atomic.Int64 // bytes that may still be reserved before the floor
	reserved atomic.Int64 // since the reading
}

const (
	freeEvery = 100 * time.Millisecond
	freeSlack = 64 << 20
)

var clockBase = time.Now()

func monotonic() int64 { return int64(time.Since(clockBase)) }

// enough reports whether n more bytes in dir keep the file system above
// its floor (MinFreePercent). A file system that cannot be read (or a
// platform without statfs) is not limited here: the disk cap still is.
func (f *freeSpace) enough(dir string, n int64) bool {
	d := f.dir.Load()
	stale := d == nil || *d != dir || f.old()
	if stale {
		f.read(dir)
	}
	if f.spare.Add(-n) < 0 {
		f.spare.Add(n)
		return false
	}
	f.reserved.Add(n)
	return true
}

// old reports whether the reading is due again (at 0: none was taken).
func (f *freeSpace) old() bool {
	at := f.at.Load()
	return at == 0 || monotonic()-at > int64(freeEvery) || f.reserved.Load() > freeSlack
}

// read takes a new reading of dir's file system.
func (f *freeSpace) read(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d := f.dir.Load(); d != nil && *d == dir && !f.old() {
		return // another spill just read it
	}
	avail, total, ok := statFS(dir) // a var: tests read a file system of their own making
	// Bytes reserved and not yet written are not in this reading: the
	// floor may be passed by what spills write meanwhile, a freeSlack at
	// most between readings.
	spare := int64(1) << 62
	if ok {
		spare = avail - total*MinFreePercent/100
	}
	f.spare.Store(spare)
	f.reserved.Store(0)
	f.at.Store(max(monotonic(), 1))
	f.dir.Store(&dir)
}
