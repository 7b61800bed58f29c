// Package bodybuf holds a message body whole before it is forwarded: in
// pooled memory chunks up to a per-body bound, then in a temporary file
// that is unlinked as it is opened, so that none survives a crash. Its
// tradeoff: a slow sender costs edgeway a buffer instead of costing the
// server behind it a connection; the Pool caps what all bodies together
// hold in memory and on disk, and a body that would pass the disk cap is
// not held at all (the caller streams it).
//
// Cost: a body takes one 4 KiB chunk for its first bytes and 64 KiB chunks
// after that, from sync.Pools; a request without a body takes nothing.
// Request bodies use a Buffer (kept whole for retries); response bodies a
// Queue, which hands back what the client took at once. Both share one
// Pool and its caps.
package bodybuf

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// The chunk sizes: a body starts with a small chunk, so that a client that
// sends a few bytes and stalls holds 4 KiB, and goes on in large ones.
const (
	SmallChunk = 4 << 10
	Chunk      = 64 << 10
)

// Defaults of Limits' zero fields.
const (
	DefaultMemory  int64 = 32 << 20
	DefaultDisk    int64 = 8 << 30
	DefaultPerBody int64 = 1 << 20
)

// MinFreePercent is the share of its file system a spill always leaves
// free, whatever Limits.Disk allows: temporary files never fill the
// disk that edgeway (or the machine) logs and writes state to.
const MinFreePercent = 5

// Limits bounds what bodies hold (conf.Buffers).
type Limits struct {
	// Memory caps the chunk bytes all bodies hold together; a body that
	// needs a chunk past it spills to disk. Each body's first 4 KiB
	// chunk is granted even past the cap (it is the buffer the body is
	// read into), so the memory held can pass Memory by 4 KiB per body
	// in progress. 0: DefaultMemory.
	Memory int64
	// Disk caps the bytes all temporary files hold together; a body that
	// would pass it gets ErrFull. 0: DefaultDisk.
	Disk int64
	// PerBody caps the memory one body holds before it spills. 0:
	// DefaultPerBody.
	PerBody int64
	// Dir is where temporary files are made. "": os.TempDir().
	Dir string
	// SpillGrace is how long a response body (a Queue) whose memory is
	// full waits for its consumer before it spills. 0: DefaultSpillGrace.
	SpillGrace time.Duration
}

// withDefaults fills in the zero fields.
func (l Limits) withDefaults() Limits {
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	if l.Disk <= 0 {
		l.Disk = DefaultDisk
	}
	if l.PerBody <= 0 {
		l.PerBody = DefaultPerBody
	}
	if l.Dir == "" {
		l.Dir = os.TempDir()
	}
	if l.SpillGrace <= 0 {
		l.SpillGrace = DefaultSpillGrace
	}
	return l
}

// ErrFull is what a Buffer returns when the body would pass the disk cap.
var ErrFull = errors.New("bodybuf: the buffer disk cap is reached")

// Pool hands out chunks and counts what every Buffer holds. Its methods
// are safe for concurrent use; the counters are atomics, so a body's
// chunk costs two atomic adds.
type Pool struct {
	lim       atomic.Pointer[Limits]
	memory    atomic.Int64 // chunk bytes held by Buffers
	disk      atomic.Int64 // bytes reserved in temporary files
	spills    atomic.Uint64
	overflows atomic.Uint64
	// The share of the counters above that Queues (responses) hold:
	// memory and disk count every body against one cap, and Stats splits
	// them for the metrics.
	respMemory, respDisk      atomic.Int64
	respSpills, respOverflows atomic.Uint64
	free                      freeSpace
}

// NewPool returns a Pool with the given limits (zero fields: defaults).
func NewPool(l Limits) *Pool {
	p := &Pool{}
	p.SetLimits(l)
	return p
}

// SetLimits replaces the limits (on reload). What bodies hold already
// stays; the new caps apply to what they ask for next.
func (p *Pool) SetLimits(l Limits) {
	l = l.withDefaults()
	p.lim.Store(&l)
}

// Limits returns the limits in force, defaults filled in.
func (p *Pool) Limits() Limits { return *p.lim.Load() }

// Stats is a snapshot of a Pool's counters: Memory, Disk, Spills and
// Overflows are the Buffers' (request bodies), Response the Queues'.
type Stats struct {
	Memory, Disk int64  // bytes held now
	Spills       uint64 // bodies that went on from memory to a file
	Overflows    uint64 // bodies that could not be held: ErrFull, or a file that failed
	Response     QueueStats
}

// QueueStats are the counters of the Queues (response bodies).
type QueueStats struct {
	Memory, Disk int64  // bytes held now, not yet taken by the consumer
	Spills       uint64 // bodies that went on from memory to a file
	Overflows    uint64 // bodies past the caps that streamed (waited for the consumer)
}

// Stats returns the counters.
func (p *Pool) Stats() Stats {
	r := QueueStats{Memory: p.respMemory.Load(), Disk: p.respDisk.Load(),
		Spills: p.respSpills.Load(), Overflows: p.respOverflows.Load()}
	return Stats{Memory: max(p.memory.Load()-r.Memory, 0), Disk: max(p.disk.Load()-r.Disk, 0),
		Spills: p.spills.Load() - r.Spills, Overflows: p.overflows.Load() - r.Overflows, Response: r}
}

// reserveDisk reserves n bytes of temporary file: within the disk cap,
// and only while the file system of lim.Dir keeps MinFreePercent free.
func (p *Pool) reserveDisk(n int64, lim *Limits) bool {
	if !reserve(&p.disk, n, lim.Disk) {
		return false
	}
	if !p.free.enough(lim.Dir, n) {
		p.disk.Add(-n)
		return false
	}
	return true
}

// reserve adds n to c unless that passes limit.
func reserve(c *atomic.Int64, n, limit int64) bool {
	if c.Add(n) <= limit {
		return true
	}
	c.Add(-n)
	return false
}

var (
	smallChunks = sync.Pool{New: func() any { return new([SmallChunk]byte) }}
	bigChunks   = sync.Pool{New: func() any { return new([Chunk]byte) }}
)

// getChunk returns an empty pooled chunk of size SmallChunk or Chunk.
func getChunk(size int) []byte {
	if size == SmallChunk {
		return smallChunks.Get().(*[SmallChunk]byte)[:0]
	}
	return bigChunks.Get().(*[Chunk]byte)[:0]
}

// putChunk returns a chunk from getChunk to its pool.
func putChunk(c []byte) {
	switch cap(c) {
	case SmallChunk:
		smallChunks.Put((*[SmallChunk]byte)(c[:SmallChunk]))
	case Chunk:
		bigChunks.Put((*[Chunk]byte)(c[:Chunk]))
	}
}
