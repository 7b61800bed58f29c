package bodybuf

import (
	"fmt"
	"io"
	"os"
)

// Buffer holds one body as it is written: its first bytes in memory
// chunks and, once it spilled, the rest in an unlinked temporary file.
// The zero value is empty and unusable until Start. A Buffer is written by
// one goroutine (Space, Commit), then read through Readers once complete;
// Release hands back what it holds.
//
// Layout: the file holds the body's first FileSize bytes; chunks hold the
// bytes after them, in order. Before a spill that is every byte; after it,
// chunks holds only the stage, one chunk that collects what the next file
// write takes.
type Buffer struct {
	pool   *Pool
	chunks [][]byte // used length of each; cap is SmallChunk or Chunk
	size   int64    // bytes written
	memRes int64    // sum of the chunks' caps, counted in pool.memory
	file   *os.File
	fileN  int64 // bytes in file, counted in pool.disk
}

// Start readies b to hold a new body from p.
func (b *Buffer) Start(p *Pool) {
	*b = Buffer{pool: p, chunks: b.chunks[:0]}
}

// Size returns the bytes written (also after Release).
func (b *Buffer) Size() int64 { return b.size }

// Spilled reports whether part of the body is in a file.
func (b *Buffer) Spilled() bool { return b.file != nil }

// Space returns where the next bytes go: the free tail of the last chunk,
// a new chunk, or (once spilled) the stage after writing it to the file.
// Commit says how many of them were filled. The error is ErrFull past the
// disk cap, or a failure to make or write the file; what was committed
// stays readable either way.
func (b *Buffer) Space() ([]byte, error) {
	if k := len(b.chunks); k > 0 {
		if last := b.chunks[k-1]; len(last) < cap(last) {
			return last[len(last):cap(last)], nil
		}
	}
	if b.file != nil {
		if err := b.flush(); err != nil {
			return nil, err
		}
		return b.chunks[0][:cap(b.chunks[0])], nil
	}
	lim := b.pool.lim.Load()
	switch {
	case len(b.chunks) == 0:
		b.pool.memory.Add(SmallChunk) // granted past the cap: see Limits.Memory
		b.addChunk(SmallChunk)
	case b.memRes+Chunk <= lim.PerBody && reserve(&b.pool.memory, Chunk, lim.Memory):
		b.addChunk(Chunk)
	default:
		if err := b.spill(lim); err != nil {
			return nil, err
		}
		return b.chunks[0][:cap(b.chunks[0])], nil
	}
	last := b.chunks[len(b.chunks)-1]
	return last[:cap(last)], nil
}

func (b *Buffer) addChunk(size int) {
	b.chunks = append(b.chunks, getChunk(size))
	b.memRes += int64(size)
}

// Commit records that n bytes of the last Space were written.
func (b *Buffer) Commit(n int) {
	if n <= 0 {
		return
	}
	k := len(b.chunks) - 1
	b.chunks[k] = b.chunks[k][:len(b.chunks[k])+n]
	b.size += int64(n)
}

// spill moves the chunks (all full) into a new temporary file and keeps
// one as the stage: a large one when the memory cap allows.
func (b *Buffer) spill(lim *Limits) error {
	f, err := openTemp(lim.Dir)
	if err != nil {
		b.pool.overflows.Add(1)
		return fmt.Errorf("bodybuf: making a temporary file in %s: %w", lim.Dir, err)
	}
	b.file = f
	b.pool.spills.Add(1)
	for len(b.chunks) > 0 {
		if err := b.flush(); err != nil {
			return err
		}
		if len(b.chunks) == 1 {
			break
		}
		c := b.chunks[0]
		copy(b.chunks, b.chunks[1:])
		b.chunks = b.chunks[:len(b.chunks)-1]
		b.freeChunk(c)
	}
	if stage := b.chunks[0]; cap(stage) == SmallChunk && reserve(&b.pool.memory, Chunk, lim.Memory) {
		b.freeChunk(stage)
		b.chunks[0] = getChunk(Chunk)
		b.memRes += Chunk
	}
	return nil
}

// flush writes the first chunk to the file and empties it.
func (b *Buffer) flush() error {
	c := b.chunks[0]
	if len(c) == 0 {
		return nil
	}
	if !b.pool.reserveDisk(int64(len(c)), b.pool.lim.Load()) {
		b.pool.overflows.Add(1)
		return ErrFull
	}
	n, err := b.file.WriteAt(c, b.fileN)
	b.fileN += int64(n)
	if n < len(c) {
		b.pool.overflows.Add(1)
		b.pool.disk.Add(int64(n - len(c)))
		copy(c, c[n:])
		b.chunks[0] = c[:len(c)-n]
		return fmt.Errorf("bodybuf: writing a temporary file: %w", err)
	}
	b.chunks[0] = c[:0]
	return nil
}

func (b *Buffer) freeChunk(c []byte) {
	b.memRes -= int64(cap(c))
	b.pool.memory.Add(-int64(cap(c)))
	putChunk(c)
}

// Release hands back the chunks and closes the file (which the kernel
// then frees: it has no name). reuse false keeps the chunks from the
// pools (a reader may still hold one); the counters drop either way.
// Release may be called on a Buffer never started, and twice.
func (b *Buffer) Release(reuse bool) {
	if b.pool == nil {
		return
	}
	for i, c := range b.chunks {
		if reuse {
			putChunk(c)
		}
		b.chunks[i] = nil
	}
	b.pool.memory.Add(-b.memRes)
	if b.file != nil {
		b.file.Close()
		b.pool.disk.Add(-b.fileN)
	}
	*b = Buffer{chunks: b.chunks[:0], size: b.size}
}

// Reader reads a complete Buffer from its start; any number of Readers
// may read one Buffer at once (the file is read with pread).
type Reader struct {
	b   *Buffer
	off int64 // in the body
	ci  int   // chunk of off, once off is past the file
	co  int   // offset in that chunk
}

// NewReader returns a Reader at the start of b's body.
func (b *Buffer) NewReader() Reader { return Reader{b: b} }

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	b := r.b
	if r.off < b.fileN {
		n, err := b.file.ReadAt(p[:min(int64(len(p)), b.fileN-r.off)], r.off)
		r.off += int64(n)
		if err == io.EOF && r.off == b.fileN {
			err = nil
		}
		return n, err
	}
	for r.ci < len(b.chunks) {
		c := b.chunks[r.ci]
		if r.co < len(c) {
			n := copy(p, c[r.co:])
			r.co += n
			r.off += int64(n)
			return n, nil
		}
		r.ci, r.co = r.ci+1, 0
	}
	return 0, io.EOF
}
