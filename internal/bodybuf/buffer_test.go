package bodybuf

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// fill writes body into b through Space and Commit, in pieces of at most
// step bytes, as a network read would.
func fill(b *Buffer, body []byte, step int) error {
	for len(body) > 0 {
		p, err := b.Space()
		if err != nil {
			return err
		}
		n := copy(p[:min(len(p), step)], body)
		b.Commit(n)
		body = body[n:]
	}
	return nil
}

func randomBody(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	r.Read(b)
	return b
}

func TestBufferRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		size    int
		lim     Limits
		spilled bool
	}{
		{desc: "small body in one small chunk", size: 100},
		{desc: "memory only", size: 600 << 10},
		{desc: "past the per-body bound", size: 3<<20 + 17, lim: Limits{PerBody: 256 << 10}, spilled: true},
		{desc: "past the memory cap", size: 1 << 20, lim: Limits{Memory: 1}, spilled: true},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			tc.lim.Dir = t.TempDir()
			p := NewPool(tc.lim)
			body := randomBody(tc.size)
			var b Buffer
			b.Start(p)
			if err := fill(&b, body, 3000); err != nil {
				t.Fatal(err)
			}
			if b.Size() != int64(len(body)) || b.Spilled() != tc.spilled {
				t.Fatalf("size %d spilled %v, want %d %v", b.Size(), b.Spilled(), len(body), tc.spilled)
			}
			for range 2 { // a retry reads it again
				r := b.NewReader()
				got, err := io.ReadAll(&r)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("read back %d bytes, err %v; want the %d written", len(got), err, len(body))
				}
			}
			if ents, _ := os.ReadDir(tc.lim.Dir); len(ents) != 0 {
				t.Errorf("the temporary folder holds %d names, want none (unlinked at open)", len(ents))
			}
			b.Release(true)
			b.Release(true)
			if s := p.Stats(); s.Memory != 0 || s.Disk != 0 {
				t.Errorf("after Release: %+v, want nothing held", s)
			}
		})
	}
}

func TestBufferDiskCap(t *testing.T) {
	t.Parallel()
	p := NewPool(Limits{PerBody: 64 << 10, Disk: 256 << 10, Dir: t.TempDir()})
	body := randomBody(1 << 20)
	var b Buffer
	b.Start(p)
	err := fill(&b, body, 1<<20)
	if !errors.Is(err, ErrFull) {
		t.Fatalf("fill past the disk cap: %v, want ErrFull", err)
	}
	if s := p.Stats(); s.Disk > 256<<10 || s.Overflows != 1 || s.Spills != 1 {
		t.Errorf("stats %+v: want disk at most 256KiB, one spill, one overflow", s)
	}
	// What was committed reads back: the caller streams it, then the rest.
	r := b.NewReader()
	got, _ := io.ReadAll(&r)
	if int64(len(got)) != b.Size() || !bytes.Equal(got, body[:len(got)]) {
		t.Fatalf("prefix of %d bytes does not match the body (size %d)", len(got), b.Size())
	}
	b.Release(true)
	if s := p.Stats(); s.Memory != 0 || s.Disk != 0 {
		t.Errorf("after Release: %+v", s)
	}
}

// TestOpenNamedUnlinks: the fallback for file systems without O_TMPFILE
// leaves no name behind either.
func TestOpenNamedUnlinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := openNamed(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("body")); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d names left in the folder, want none", len(ents))
	}
}
