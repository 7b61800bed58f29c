package bodybuf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Queue is a body in transit, first in first out: one goroutine (the
// producer, reading a server's response) appends to it as fast as its
// source gives bytes, another (the consumer, writing to a client) takes
// them from the front at its own pace. Unlike a Buffer, what the consumer
// took is handed back at once: a Queue holds only what the consumer has
// not taken yet, in memory chunks (4 KiB granted, then 64 KiB ones up to
// the per-body bound and the Pool's memory cap), then in an unlinked
// temporary file once memory is spent, up to max bytes held. Past max, or
// when neither memory nor disk can be had, the producer waits for the
// consumer: the rest streams (Full reports it).
//
// The zero value is unusable: Start it. Release, once both sides are done,
// hands back what is left.
type Queue struct {
	pool *Pool
	mem  int64 // memory one body may hold; 0: the Pool's PerBody
	max  int64

	mu     sync.Mutex
	chunks [][]byte // memory, in order; chunks[0][head:] is the front
	head   int
	memRes int64 // sum of the chunks' caps
	file   *os.File
	fileW  int64 // bytes written to the file (reserved on disk)
	fileR  int64 // bytes of the file taken
	resv   int64 // disk reserved at fileW for the read in progress
	toFile bool  // new bytes go to the file: the memory ones are older
	// spillNow: the consumer let SpillGrace pass with memory full; the
	// next bytes go to the file without waiting again (until rewind).
	spillNow bool
	held     int64 // appended and not taken
	end      error // the producer's end: io.EOF or its error
	stop     bool  // the consumer gave up
	full     bool  // the producer had to wait for the consumer at least once
	data     chan struct{}
	room     chan struct{}
}

// ErrStopped is what Fill returns once the consumer called Stop.
var ErrStopped = errors.New("bodybuf: the consumer stopped")

// Start readies q to carry a new body through p, holding at most mem bytes
// of it in memory (0: the Pool's PerBody) and at most max bytes not yet
// taken (max <= 0: no bound but the Pool's caps).
func (q *Queue) Start(p *Pool, mem, max int64) {
	*q = Queue{pool: p, mem: mem, max: max, chunks: q.chunks[:0], data: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Fill reads once from r into the queue and returns what it read; stage is
// the producer's own scratch buffer for bytes that go to the file. It
// waits first while the queue holds max bytes, or when it can have
// neither a memory chunk nor disk. Its error is r's (io.EOF at the end),
// ErrStopped, or a failure to write the file.
func (q *Queue) Fill(r io.Reader, stage []byte) (int, error) {
	p, toFile, err := q.space(stage)
	if err != nil {
		return 0, err
	}
	n, rerr := r.Read(p)
	if n > 0 || toFile {
		if err := q.commit(p[:n], toFile); err != nil {
			return n, err
		}
	}
	return n, rerr
}

// space waits for room and returns where the next read goes.
func (q *Queue) space(stage []byte) ([]byte, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.stop {
			return nil, false, ErrStopped
		}
		if q.held == 0 && q.toFile {
			q.rewind()
		}
		if q.max <= 0 || q.held < q.max {
			p, toFile, ok, full := q.spaceLocked(stage, q.spillNow)
			if ok {
				return p, toFile, nil
			}
			if full {
				// Memory is full and the next bytes would go to a file:
				// give the consumer SpillGrace to make room first.
				q.graceLocked()
				continue
			}
		}
		if q.held == 0 {
			// Nothing held and no room at all cannot happen (the first
			// chunk is granted); guard against spinning.
			return nil, false, fmt.Errorf("bodybuf: no room for a body")
		}
		q.countOverflow()
		q.mu.Unlock()
		<-q.room
		q.mu.Lock()
	}
}

// DefaultSpillGrace is how long a producer whose memory is full waits for
// the consumer to make room before it spills to the file (Limits.SpillGrace). A consumer that
// keeps up (a fast client) takes a chunk in far less, and the body stays
// in memory: a file costs two more copies and the file system's work for
// every byte. A consumer that does not (a slow reader) costs the producer
// one such wait per spill; from then on the bytes go to the file until
// the consumer has drained it.
const DefaultSpillGrace = 20 * time.Millisecond

// graceLocked waits up to the pool's SpillGrace for the consumer to take bytes (or
// stop); past it, the next space spills. q.mu is held, and released while
// it waits.
func (q *Queue) graceLocked() {
	q.mu.Unlock()
	t := time.NewTimer(q.pool.lim.Load().SpillGrace)
	select {
	case <-q.room:
		t.Stop()
		q.mu.Lock()
	case <-t.C:
		q.mu.Lock()
		q.spillNow = true
	}
}

// spaceLocked finds room: the last chunk's free tail, a new chunk, or the
// stage for the file. q.mu is held. With spill false it does not go to
// the file where memory is full and bytes are held: it reports full
// instead (the caller gives the consumer a grace first).
func (q *Queue) spaceLocked(stage []byte, spill bool) (p []byte, toFile, ok, full bool) {
	if q.toFile {
		p, toFile, ok = q.fileSpace(stage)
		return p, toFile, ok, false
	}
	if k := len(q.chunks); k > 0 {
		if last := q.chunks[k-1]; len(last) < cap(last) {
			return last[len(last):cap(last)], false, true, false
		}
	}
	lim := q.pool.lim.Load()
	mem := q.mem
	if mem <= 0 {
		mem = lim.PerBody
	}
	switch {
	case q.memRes == 0:
		q.pool.memory.Add(SmallChunk) // granted past the cap, as a Buffer's first
		q.addChunk(SmallChunk)
	case q.memRes+Chunk <= mem && reserve(&q.pool.memory, Chunk, lim.Memory):
		q.addChunk(Chunk)
	case !spill && q.held > 0:
		return nil, false, false, true
	default:
		p, toFile, ok = q.fileSpace(stage)
		return p, toFile, ok, false
	}
	last := q.chunks[len(q.chunks)-1]
	return last[:cap(last)], false, true, false
}

// fileSpace opens the file when needed and reserves disk for a read into
// stage; false when it cannot (the disk cap, a failed file).
func (q *Queue) fileSpace(stage []byte) ([]byte, bool, bool) {
	lim := q.pool.lim.Load()
	if q.file == nil {
		f, err := openTemp(lim.Dir)
		if err != nil {
			q.countOverflow()
			return nil, false, false
		}
		q.file = f
		q.pool.spills.Add(1)
		q.pool.respSpills.Add(1)
	}
	n := int64(len(stage))
	if q.max > 0 {
		n = min(n, q.max-q.held)
	}
	if !q.pool.reserveDisk(n, lim) {
		q.countOverflow()
		return nil, false, false
	}
	q.pool.respDisk.Add(n)
	q.fileW += n // reserved; commit gives back what the read did not fill
	q.resv = n
	q.toFile = true
	return stage[:n], true, true
}

func (q *Queue) countOverflow() {
	if !q.full {
		q.full = true
		q.pool.overflows.Add(1)
		q.pool.respOverflows.Add(1)
	}
}

func (q *Queue) addChunk(size int) {
	q.chunks = append(q.chunks, getChunk(size))
	q.memRes += int64(size)
	q.pool.respMemory.Add(int64(size))
}

// commit records p, just read into the last space: in place in memory, or
// written to the file at the reserved offset.
func (q *Queue) commit(p []byte, toFile bool) error {
	if !toFile {
		q.mu.Lock()
		k := len(q.chunks) - 1
		q.chunks[k] = q.chunks[k][:len(q.chunks[k])+len(p)]
		q.held += int64(len(p))
		q.mu.Unlock()
		signal(q.data)
		return nil
	}
	q.mu.Lock()
	reserved := q.resv
	off := q.fileW - reserved
	q.mu.Unlock()
	// The reserved range is the producer's alone: the consumer reads below
	// fileW - reserved only (held counts committed bytes).
	var err error
	if len(p) > 0 {
		_, err = q.file.WriteAt(p, off)
	}
	q.mu.Lock()
	q.resv = 0
	unused := reserved - int64(len(p))
	q.fileW -= unused
	q.pool.disk.Add(-unused)
	q.pool.respDisk.Add(-unused)
	if err == nil {
		q.held += int64(len(p))
	} else {
		q.fileW -= int64(len(p))
		q.pool.disk.Add(-int64(len(p)))
		q.pool.respDisk.Add(-int64(len(p)))
	}
	q.mu.Unlock()
	if err != nil {
		return fmt.Errorf("bodybuf: writing a temporary file: %w", err)
	}
	signal(q.data)
	return nil
}

// rewind empties the drained file so that the next bytes go to memory
// again. q.mu is held; nothing is held, so no view of the file is out.
func (q *Queue) rewind() {
	if err := q.file.Truncate(0); err != nil {
		return // keep appending to it
	}
	q.pool.disk.Add(-q.fileW)
	q.pool.respDisk.Add(-q.fileW)
	q.fileW, q.fileR, q.toFile, q.spillNow = 0, 0, false, false
}

// Close ends the producer's side: err is io.EOF at the end of the body,
// else why it broke; a second Close keeps the first err. It reports false
// when the consumer had stopped.
func (q *Queue) Close(err error) bool {
	q.mu.Lock()
	if q.end == nil {
		q.end = err
	}
	stopped := q.stop
	q.mu.Unlock()
	signal(q.data)
	return !stopped
}

// Stop ends the consumer's side (its client went away): Fill fails with
// ErrStopped from then on. It reports whether the producer had not
// closed its side yet.
func (q *Queue) Stop() bool {
	q.mu.Lock()
	q.stop = true
	open := q.end == nil
	q.mu.Unlock()
	signal(q.room)
	return open
}

// Ready reports whether Next would return at once: bytes are held, or the
// producer has ended.
func (q *Queue) Ready() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held > 0 || q.end != nil
}

// Next waits for bytes at the front and returns a view of them, valid
// until Done; scratch is where bytes from the file are read to. At the
// end it returns the producer's error: io.EOF after a whole body.
func (q *Queue) Next(scratch []byte) ([]byte, error) {
	q.mu.Lock()
	for q.held == 0 && q.end == nil {
		q.mu.Unlock()
		<-q.data
		q.mu.Lock()
	}
	if q.held == 0 {
		err := q.end
		q.mu.Unlock()
		return nil, err
	}
	for len(q.chunks) > 0 {
		c := q.chunks[0]
		if q.head < len(c) {
			q.mu.Unlock()
			return c[q.head:], nil
		}
		if len(q.chunks) == 1 && !q.toFile {
			break // unreachable: held > 0 and nothing in memory means the file
		}
		q.popChunk() // taken whole, and the producer writes to the file now
	}
	if q.file == nil { // cannot happen: held bytes not in memory are in the file
		q.mu.Unlock()
		return nil, errors.New("bodybuf: queue bytes lost")
	}
	off, n := q.fileR, min(int64(len(scratch)), q.held)
	q.mu.Unlock()
	m, err := q.file.ReadAt(scratch[:n], off)
	if m > 0 {
		return scratch[:m], nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("bodybuf: reading a temporary file: %w", err)
}

// popChunk hands back the front chunk, taken whole. q.mu is held.
func (q *Queue) popChunk() {
	c := q.chunks[0]
	copy(q.chunks, q.chunks[1:])
	q.chunks[len(q.chunks)-1] = nil
	q.chunks = q.chunks[:len(q.chunks)-1]
	q.head = 0
	q.memRes -= int64(cap(c))
	q.pool.memory.Add(-int64(cap(c)))
	q.pool.respMemory.Add(-int64(cap(c)))
	putChunk(c)
}

// Done says the consumer took n bytes of the last Next's view.
func (q *Queue) Done(n int) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	q.held -= int64(n)
	if len(q.chunks) > 0 && q.head < len(q.chunks[0]) {
		q.head += n
		if c := q.chunks[0]; q.head == cap(c) {
			q.popChunk()
		}
	} else {
		q.fileR += int64(n)
	}
	q.mu.Unlock()
	signal(q.room)
}

// Full reports whether the producer ever had to wait for the consumer:
// the body outgrew what the queue may hold and streamed.
func (q *Queue) Full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.full
}

// Release hands back the chunks and closes the file. Call it once the
// producer returned and the consumer holds no view; it may be called on a
// Queue never started, and twice.
func (q *Queue) Release() {
	if q.pool == nil {
		return
	}
	for i, c := range q.chunks {
		putChunk(c)
		q.chunks[i] = nil
	}
	q.pool.memory.Add(-q.memRes)
	q.pool.respMemory.Add(-q.memRes)
	if q.file != nil {
		q.file.Close()
		q.pool.disk.Add(-q.fileW)
		q.pool.respDisk.Add(-q.fileW)
	}
	*q = Queue{chunks: q.chunks[:0]}
}
