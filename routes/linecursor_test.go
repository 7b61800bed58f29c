package routes

import (
	"math/rand/v2"
	"testing"
)

// TestLineCursorAgreesWithPos checks the scanner's incremental positions
// against Source.Pos's binary search, for offsets asked in any order.
func TestLineCursorAgreesWithPos(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"", "\n", "a", "a\nb", "\n\nab\r\ncd\n", "route a {\n  match Host(`a`)\n  to u\n}\n"} {
		src := NewSource("f", []byte(text))
		c := lineCursor{src: src}
		rnd := rand.New(rand.NewPCG(1, uint64(len(text))))
		for i := 0; i < 200; i++ {
			off := rnd.IntN(len(text)+3) - 1 // out-of-range offsets are clamped
			if got, want := c.pos(off), src.Pos(off); got != want {
				t.Fatalf("%q offset %d: cursor %+v, Pos %+v", text, off, got, want)
			}
		}
	}
}
